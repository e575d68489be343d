import { canonicalEndpointTarget, endpointKeyOfHost, endpointUrlOf, hostEndpointRewrite, requestUrlRewrite } from './endpoint-urls';

describe('endpoint URLs', () => {
  it('are <PUBLIC_URL>/e/<key> without a domain, <key>.<domain> with the scheme and port of PUBLIC_URL with one', () => {
    expect(endpointUrlOf({ publicUrl: 'http://localhost:3000', endpointDomain: '' }, 'enabc')).toBe('http://localhost:3000/e/enabc');
    expect(endpointUrlOf({ publicUrl: 'https://api.example.com', endpointDomain: 'm.example.com' }, 'enabc')).toBe('https://enabc.m.example.com');
    expect(endpointUrlOf({ publicUrl: 'http://127.0.0.1:3000', endpointDomain: 'localtest.me' }, 'enabc')).toBe('http://enabc.localtest.me:3000');
    expect(endpointUrlOf({ publicUrl: 'http://localhost:3000', endpointDomain: 'x.y' }, null)).toBeUndefined();
  });

  it('route a request to <key>.<domain> as /e/<key><path>, and leave every other host alone', () => {
    const rewrite = hostEndpointRewrite('m.example.com');
    expect(rewrite({ url: '/', headers: { host: 'enabc.m.example.com' } })).toBe('/e/enabc');
    expect(rewrite({ url: '/hooks/a?x=1', headers: { host: 'ENABC.M.Example.com:8443' } })).toBe('/e/enabc/hooks/a?x=1');
    expect(rewrite({ url: '/?x=1', headers: { host: 'enabc.m.example.com' } })).toBe('/e/enabc?x=1');
    expect(rewrite({ url: '/v1/users/me', headers: { host: 'api.example.com' } })).toBe('/v1/users/me');
    expect(rewrite({ url: '/v1/users/me', headers: { host: 'm.example.com' } })).toBe('/v1/users/me');
    expect(rewrite({ url: '/x', headers: { host: 'a.b.m.example.com' } })).toBe('/x');
    expect(rewrite({ url: '/x', headers: {} })).toBe('/x');
  });

  it('read a target in absolute form as its origin form, before the host rewrite', () => {
    const plain = requestUrlRewrite('');
    expect(plain({ url: 'http://api.example.com/e/enabc/x?y=1', headers: {} })).toBe('/e/enabc/x?y=1');
    expect(plain({ url: 'HTTPS://api.example.com:8443?y=1', headers: {} })).toBe('/?y=1');
    expect(plain({ url: '/v1/users/me', headers: {} })).toBe('/v1/users/me');
    expect(plain({ url: '*', headers: {} })).toBe('*');
    const byHost = requestUrlRewrite('m.example.com');
    expect(byHost({ url: 'http://enabc.m.example.com/hooks', headers: { host: 'enabc.m.example.com' } })).toBe('/e/enabc/hooks');
  });

  it('write an endpoint target sent with escapes in its prefix as /e/<key>, the rest of the path as sent', () => {
    expect(canonicalEndpointTarget('/%65/enabc')).toBe('/e/enabc');
    expect(canonicalEndpointTarget('/e/%65n%61bc/a%2Fb%65?x=%65')).toBe('/e/enabc/a%2Fb%65?x=%65');
    expect(canonicalEndpointTarget('/%45/enabc')).toBe('/%45/enabc');
    expect(canonicalEndpointTarget('/e/en%2Fabc')).toBe('/e/en%2Fabc');
    expect(canonicalEndpointTarget('/v%31/users/me')).toBe('/v%31/users/me');
    expect(canonicalEndpointTarget('/e/enabc')).toBe('/e/enabc');
    expect(requestUrlRewrite('')({ url: 'http://h/%65/enabc/x', headers: {} })).toBe('/e/enabc/x');
    const byHost = requestUrlRewrite('m.example.com');
    expect(byHost({ url: '/%65/enabc', headers: { host: 'api.example.com' } })).toBe('/e/enabc');
    expect(byHost({ url: '/%65/enxyz', headers: { host: 'enabc.m.example.com' } })).toBe('/e/enabc/%65/enxyz');
  });

  it('name the endpoint a request was sent to by its host, and none for the shared origin', () => {
    expect(endpointKeyOfHost('m.example.com', { host: 'ENABC.m.example.com:80' })).toBe('enabc');
    expect(endpointKeyOfHost('m.example.com', { host: 'api.example.com' })).toBeUndefined();
    expect(endpointKeyOfHost('', { host: 'enabc.m.example.com' })).toBeUndefined();
  });
});
