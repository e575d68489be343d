import { clientNetwork } from './client-network';

describe('clientNetwork', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::203.0.113.7', '64:ff9b:0:0::/64'],
  ])('%s is the client %s', (address, client) => {
    expect(clientNetwork(address)).toBe(client);
  });

  it('puts every address of one /64 together, and other /64s apart', () => {
    const many = Array.from({ length: 50 }, (_, i) => clientNetwork(`2001:db8:7:9:${i.toString(16)}:1:2:3`));
    expect(new Set(many)).toEqual(new Set(['2001:db8:7:9::/64']));
    expect(clientNetwork('2001:db8:7:a::1')).not.toBe(many[0]);
  });
});
