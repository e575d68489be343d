import { hasBadQueryEncoding, repeatedHeader } from './protocol-errors';

describe('hasBadQueryEncoding', () => {
  it.each(['/v1/x?name=a%zzb', '/v1/x?name=a%2', '/v1/x?name=%', '/v1/x?n=a%C3%A9%ffb', '/v1/x?n=%C3', '/v1/x?n=%C3&m=%A9', '/v1/x?n=%C0%80', '/v1/x?n=%ED%A0%80', '/v1/x?a%zz=1'])(
    'finds an escape that is not percent-encoded UTF-8 in %s',
    (url) => expect(hasBadQueryEncoding(url)).toBe(true),
  );

  it.each(['/v1/x', '/v1/x?', '/v1/x?name=a%C3%A9b', '/v1/x?name=a+b%2B&name=%F0%9F%98%80', '/v1/dc_%zz?a=1', '/v1/x?a=%25zz'])('accepts %s', (url) =>
    expect(hasBadQueryEncoding(url)).toBe(false),
  );
});

describe('repeatedHeader', () => {
  it('names the first of Host, Authorization and Content-Type given twice, in any letter case', () => {
    expect(repeatedHeader(['Host', 'a', 'Content-Type', 'text/plain', 'content-type', 'text/plain'])).toBe('content-type');
    expect(repeatedHeader(['Authorization', 'Bearer a', 'Host', 'a', 'AUTHORIZATION', 'Bearer a', 'host', 'b'])).toBe('authorization');
    expect(repeatedHeader(['Host', 'a', 'HOST', 'a'])).toBe('host');
  });

  it('leaves other headers given twice, and names that only look like object keys', () => {
    expect(repeatedHeader(['Host', 'a', 'Accept', 'x', 'Accept', 'y', 'X-Custom', '1', 'x-custom', '2', 'Authorization', 'Bearer a', 'Content-Type', 'text/plain'])).toBeUndefined();
    expect(repeatedHeader(['constructor', 'a', 'Constructor', 'b', '__proto__', 'c', '__proto__', 'd'])).toBeUndefined();
  });
});
