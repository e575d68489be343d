import { bearerKey } from './api-key.guard';

describe('bearerKey: the key of an Authorization header', () => {
  it('reads "Bearer <key>" in any letter case with spaces or tabs around the key', () => {
    for (const h of ['Bearer k', 'bearer k', 'BEARER k', 'Bearer\tk', 'Bearer    k   ', 'Bearer k\t']) expect([h, bearerKey(h)]).toEqual([h, 'k']);
  });

  it('takes no other white space for a space: a no-break space (0xA0 in a header read as Latin-1) or a Unicode space was read as one', () => {
    for (const h of ['Bearer\u00a0k', 'Bearer k\u00a0', 'Bearer\u2003k', 'Bearer\u3000k', 'Bearer\u000bk', 'Bearer\u000ck', 'Bearer\u00a0\u00a0k']) {
      expect([JSON.stringify(h), bearerKey(h)]).toEqual([JSON.stringify(h), undefined]);
    }
    expect([bearerKey(undefined), bearerKey(''), bearerKey('Bearer'), bearerKey('Bearer k k'), bearerKey('Basic k')]).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});
