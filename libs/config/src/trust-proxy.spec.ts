import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './config';
import { trustProxyFunction } from './trust-proxy';

describe('TRUST_PROXY', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cfg-'));
  const read = (value?: string) => loadConfig({ DATA_DIR: dataDir, ...(value === undefined ? {} : { TRUST_PROXY: value }) }).trustProxy;

  it('reads no proxy (unset, empty, false), every hop (true), a number of hops, or a list of addresses and CIDRs', () => {
    expect([read(), read(''), read('false'), read(' FALSE ')]).toEqual([false, false, false, false]);
    expect([read('true'), read('True')]).toEqual([true, true]);
    expect([read('0'), read('1'), read(' 2 ')]).toEqual([0, 1, 2]);
    expect(read(' 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8,192.168.0.0/255.255.0.0,loopback')).toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', '192.168.0.0/255.255.0.0', 'loopback']);
  });

  /** Which of the addresses a request came through (the connection's first, then X-Forwarded-For from its right end) are trusted. */
  const trusted = (value: string, addresses: string[]): boolean[] => addresses.map((a, hop) => trustProxyFunction(read(value))(a, hop));

  it('trusts what it names: no address, every one, the first hops, or the addresses in the list', () => {
    const path = ['127.0.0.1', '10.1.2.3', '203.0.113.9'];
    expect(trusted('', path)).toEqual([false, false, false]);
    expect(trusted('true', path)).toEqual([true, true, true]);
    expect(trusted('0', path)).toEqual([false, false, false]);
    expect(trusted('2', path)).toEqual([true, true, false]);
    expect(trusted('127.0.0.1', path)).toEqual([true, false, false]);
    expect(trusted('127.0.0.1,10.0.0.0/8', path)).toEqual([true, true, false]);
    // A connection over IPv6 from an IPv4 address (::ffff:127.0.0.1) is that address.
    expect(trusted('127.0.0.1', ['::ffff:127.0.0.1'])).toEqual([true]);
  });
});
