import { credentialsMasked, masksCredentials, shownAsWritten, shownUrl } from './shown-url';

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

describe('credentialsMasked', () => {
  it.each([
    ['https://host.example//a//b?c=1&n=2', 'https://host.example//a//b?c=1&n=2'],
    ['http://hooks.example.com:8080/a/b?c=1', 'http://hooks.example.com:8080/a/b?c=1'],
    ['https://user:tok@host.example/x?n=1', 'https://********@host.example/x?n=1'],
    ['https://host.example/x?token=abc&n=1&API_KEY=k&x%2Dsignature=s&sessionid=9', 'https://host.example/x?token=********&n=1&API_KEY=********&x%2Dsignature=********&sessionid=********'],
    ['https://host.example/x?password&pwd=', 'https://host.example/x?password&pwd=********'],
    ['not a url', 'not a url'],
  ])('%s → %s', (raw, shown) => {
    expect(credentialsMasked(raw)).toBe(shown);
  });

  it('is a fixed point: what it shows, shown again, is the same', () => {
    const shown = credentialsMasked('https://u:p@host.example/x?token=abc&n=1');
    expect(credentialsMasked(shown)).toBe(shown);
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
