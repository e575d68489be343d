import { scopeSetCookie, scopeSetCookies } from './endpoint-cookies';

describe('scopeSetCookie', () => {
  it("keeps a cookie on the shared origin under its endpoint's path, host-only", () => {
    expect(scopeSetCookie('sid=abc; Path=/; Domain=example.com; HttpOnly; Secure; SameSite=Lax', '/e/en123')).toBe('sid=abc; HttpOnly; Secure; SameSite=Lax; Path=/e/en123');
    expect(scopeSetCookie('a=1', '/e/en123')).toBe('a=1; Path=/e/en123');
    expect(scopeSetCookie('a=1;path=/v1 ; DOMAIN=.example.com;;Max-Age=60', '/e/en123')).toBe('a=1; Max-Age=60; Path=/e/en123');
  });

  it("keeps the component's path on an endpoint's own host, and drops Domain there too", () => {
    expect(scopeSetCookie('a=1; Path=/x; Domain=endpoints.example.com', undefined)).toBe('a=1; Path=/x');
    expect(scopeSetCookie('a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT', undefined)).toBe('a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT');
  });

  it('scopes each cookie of a list', () => {
    expect(scopeSetCookies(['a=1; Path=/', 'b=2'], '/e/en1')).toEqual(['a=1; Path=/e/en1', 'b=2; Path=/e/en1']);
    expect(scopeSetCookies('a=1', '/e/en1')).toEqual(['a=1; Path=/e/en1']);
  });
});
