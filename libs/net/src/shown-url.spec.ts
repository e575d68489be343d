import { shownUrl } from './shown-url';

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
