import { parseAddressRule as parseRule } from '@app/config';
import { EgressJudge } from './egress-rules';
import { interfaceAddress } from '../../../net/src/test-support/interface-address';

describe('egress rules', () => {
  it('parses ip, cidr, ip:port, cidr:port and bracketed IPv6', () => {
    expect(parseRule('10.0.0.5').port).toBeUndefined();
    expect(parseRule('10.0.0.0/8:5432').port).toBe(5432);
    expect(parseRule('[::1]:4222').port).toBe(4222);
    expect(parseRule('fd00::/8').list.check('fd00::1', 'ipv6')).toBe(true);
    expect(() => parseRule('example.com:80')).toThrow(/not an ip/);
    expect(() => parseRule('10.0.0.1:99999')).toThrow(/not an ip/);
  });

  const judge = (over: Partial<ConstructorParameters<typeof EgressJudge>[0]> = {}) =>
    new EgressJudge({ policy: { allowLoopback: false, allowPrivate: false }, allow: [], deny: [], ...over });

  it('follows ALLOW_LOOPBACK and ALLOW_PRIVATE_ADDRESSES, and always refuses metadata and link-local', () => {
    expect(judge().refuse('93.184.216.34', 443)).toBeUndefined();
    expect(judge().refuse('127.0.0.1', 8080)).toMatch(/loopback.*ALLOW_LOOPBACK/);
    expect(judge({ policy: { allowLoopback: true, allowPrivate: false } }).refuse('127.0.0.1', 8080)).toBeUndefined();
    expect(judge().refuse('10.1.2.3', 5432)).toMatch(/private/);
    expect(judge().refuse('::ffff:127.0.0.1', 80)).toMatch(/loopback/);
    expect(judge({ policy: { allowLoopback: true, allowPrivate: true } }).refuse('169.254.169.254', 80)).toMatch(/metadata/);
  });

  it('lets SANDBOX_EGRESS_ALLOW open an address and the deny list win over everything', () => {
    const j = judge({ allow: ['10.0.0.0/8:5432'], deny: ['127.0.0.1:4222', '10.0.0.9:5432'] });
    expect(j.refuse('10.0.0.7', 5432)).toBeUndefined();
    expect(j.refuse('10.0.0.7', 5433)).toMatch(/private/);
    expect(j.refuse('10.0.0.9', 5432)).toMatch(/service of the platform/);
    expect(judge({ policy: { allowLoopback: true, allowPrivate: true }, deny: ['127.0.0.0/8:4222'] }).refuse('127.0.0.2', 4222)).toMatch(/service of the platform/);
  });
});

describe('EgressJudge and this machine', () => {
  const own = interfaceAddress();
  it("treats this machine's interface addresses as this machine, however public they look", () => {
    const closed = new EgressJudge({ policy: { allowLoopback: false, allowPrivate: true }, allow: [], deny: [] });
    expect(closed.refuse(own, 6379)).toMatch(/an address of this machine \(component code reaches this machine only with ALLOW_LOOPBACK=true\)/);
    expect(closed.refuse(`::ffff:${own}`, 6379)).toMatch(/an address of this machine/);
    expect(closed.refuse('127.0.0.1', 6379)).toMatch(/a loopback address/);
    const open = new EgressJudge({ policy: { allowLoopback: true, allowPrivate: true }, allow: [], deny: [] });
    expect([open.refuse(own, 6379), open.refuse('127.0.0.1', 6379)]).toEqual([undefined, undefined]);
  });
});

describe('EgressJudge and IPv6 addresses that embed an IPv4 one', () => {
  it('refuses a denied service however its IPv4 address is written in IPv6 (NAT64, 6to4, IPv4-compatible, mapped)', () => {
    const j = new EgressJudge({ policy: { allowLoopback: true, allowPrivate: true }, allow: [], deny: ['203.0.113.7:4222', '10.0.0.0/8:5432'] });
    for (const ip of ['64:ff9b::203.0.113.7', '64:ff9b::cb00:7107', '2002:cb00:7107::1', '::203.0.113.7', '::ffff:203.0.113.7', '::ffff:0:203.0.113.7', '64:ff9b:1::203.0.113.7', '64:ff9b:1:cb00:71:700::']) {
      expect([ip, j.refuse(ip, 4222)]).toEqual([ip, expect.stringMatching(/service of the platform/)]);
    }
    expect(j.refuse('64:ff9b::10.1.2.3', 5432)).toMatch(/service of the platform/);
    expect(j.refuse('64:ff9b::203.0.113.7', 443)).toBeUndefined();
  });

  it('allows a NAT64 local-use address by SANDBOX_EGRESS_ALLOW only when every reading of it is allowed', () => {
    const j = new EgressJudge({ policy: { allowLoopback: false, allowPrivate: false }, allow: ['10.0.0.0/8'], deny: [] });
    expect(j.refuse('64:ff9b:1::10.0.0.1', 443)).toBeUndefined();
    // 127.10.0.10 through a gateway of a /64 prefix, 10.0.0.1 through one of a /96.
    expect(j.refuse('64:ff9b:1:0:7f:a00:a00:1', 443)).toMatch(/loopback/);
  });
});
