import { hasBadQueryEncoding } from './protocol-errors';

describe('hasBadQueryEncoding', () => {
  it.each(['/v1/x?name=a%zzb', '/v1/x?name=a%2', '/v1/x?name=%', '/v1/x?n=a%C3%A9%ffb', '/v1/x?n=%C3', '/v1/x?n=%C3&m=%A9', '/v1/x?n=%C0%80', '/v1/x?n=%ED%A0%80', '/v1/x?a%zz=1'])(
    'finds an escape that is not percent-encoded UTF-8 in %s',
    (url) => expect(hasBadQueryEncoding(url)).toBe(true),
  );

  it.each(['/v1/x', '/v1/x?', '/v1/x?name=a%C3%A9b', '/v1/x?name=a+b%2B&name=%F0%9F%98%80', '/v1/dc_%zz?a=1', '/v1/x?a=%25zz'])('accepts %s', (url) =>
    expect(hasBadQueryEncoding(url)).toBe(false),
  );
});
