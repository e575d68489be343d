import { EventEmitter } from 'node:events';
import { Server } from 'node:http';
import type { Socket } from 'node:net';
import { boundConnections, openFileLimit, totalConnectionBound } from './connection-bounds';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('connection bounds', () => {
  it("reads the process's soft open-file limit, or nothing when it cannot", () => {
    expect(openFileLimit(() => LIMITS)).toBe(20_000);
    expect(openFileLimit(() => 'Max open files  unlimited  unlimited  files')).toBeUndefined();
    expect(
      openFileLimit(() => {
        throw new Error('no /proc here');
      }),
    ).toBeUndefined();
  });

  it('takes HTTP_MAX_CONNECTIONS as set, else the open-file limit less 1,024, else no bound', () => {
    expect(totalConnectionBound(500, 20_000)).toBe(500);
    expect(totalConnectionBound(0, 20_000)).toBe(18_976);
    expect(totalConnectionBound(0, 1_024)).toBeUndefined();
    expect(totalConnectionBound(0, undefined)).toBeUndefined();
  });

  it('counts the addresses of one IPv6 /64 as one client, and an IPv4-mapped address as its IPv4', () => {
    const server = new Server();
    server.removeAllListeners('connection');
    const served: string[] = [];
    server.on('connection', (socket: Socket) => served.push(socket.remoteAddress!));
    boundConnections(server, { perAddress: 2, total: 0, trusted: () => false });
    const refused: string[] = [];
    const connect = (remoteAddress: string): void => {
      const socket = Object.assign(new EventEmitter(), { remoteAddress, resume: () => undefined, destroy: () => undefined, end: () => refused.push(remoteAddress) });
      server.emit('connection', socket);
    };
    ['2001:db8:7:9::1', '2001:db8:7:9:ffff::2', '2001:db8:7:9:1:2:3:4', '2001:db8:7:a::1', '203.0.113.7', '::ffff:203.0.113.7', '203.0.113.7'].forEach(connect);
    expect(refused).toEqual(['2001:db8:7:9:1:2:3:4', '203.0.113.7']);
    expect(served).toEqual(['2001:db8:7:9::1', '2001:db8:7:9:ffff::2', '2001:db8:7:a::1', '203.0.113.7', '::ffff:203.0.113.7']);
  });
});
