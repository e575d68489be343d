import { masksCredentials, shownAsWritten, shownUrl } from './shown-url';

describe('shownUrl', () => {
  it.each([
    ['https://user:tok@host.example/x.mjs', 'https://********@host.example/x.mjs'],
    ['https://tok@host.example/x.mjs', 'https://********@host.example/x.mjs'],
    ['https://host.example/x.mjs?token=abc&ref=main', 'https://host.example/x.mjs?token=********&ref=********'],
    ['https://host.example/x.mjs?abc123&&a==b#frag', 'https://host.example/x.mjs?********&&a=********#frag'],
    ['https://host.example/blob/main/x.mjs', 'https://host.example/blob/main/x.mjs'],
    ['https://********@host.example/x.mjs?token=********', 'https://********@host.example/x.mjs?token=********'],
    ['not a url user:pw', '********'],
  ])('%s → %s', (raw, shown) => {
    expect(shownUrl(raw)).toBe(shown);
  });
});

describe('shownAsWritten', () => {
  it.each([
    ['https://host.example//a//b', 'https://host.example//a//b'],
    ['https://user:tok@host.example/x', 'https://********@host.example/x'],
    ['https://host.example?c=1', 'https://host.example/?c=********'],
    ['not a url', 'not a url'],
  ])('%s → %s', (raw, shown) => {
    expect(shownAsWritten(raw)).toBe(shown);
  });
});

describe('masksCredentials', () => {
  it.each([
    ['https://********@host.example/x', true],
    ['https://u:********@host.example/x', true],
    ['https://host.example/x?a=1&token=********', true],
    ['https://host.example/x?********', true],
    ['https://host.example/x?a=1&b=*', false],
    ['https://user:tok@host.example/x********', false],
  ])('%s → %s', (raw, masks) => {
    expect(masksCredentials(new URL(raw))).toBe(masks);
  });
});
