import { readFile } from 'node:fs/promises';
import { connect as netConnect, Socket } from 'node:net';
import { BATCH_BYTES } from '@app/nats';
import { apiOnlySystemWithEmitter } from './support/system-with-user';
import { emitsConsumersOf } from './support/emits-consumers';
import { eventually } from './support/system';
import { insertSource } from './events.helpers';

/**
 * Events of about 300 KB: 200 of them are 60 MB, thirty batches of what one stream takes at a time (2 MiB), more than
 * the kernel holds on a loopback connection.
 */
const PAD = 'x'.repeat(300_000);
const EVENTS = 200;

/**
 * A stream whose client stops reading takes no more from JetStream than one batch: the api fetches the next
 * batch only once the client has read the last one. Before, each stream pulled 256 events ahead whatever the
 * client read, so a few paused readers of large events filled the api's memory and its NATS connection fell
 * behind until nats-server cut it (every stream and request of the api with it).
 */
describe('an event stream whose client does not read', () => {
  const ctx = apiOnlySystemWithEmitter();

  /** Events the server has delivered to the api's consumer of this source's subject (-1: none yet). */
  const deliveredToApi = async (sourceId: string): Promise<number> => (await emitsConsumersOf(ctx.system, sourceId))[0]?.delivered.consumer_seq ?? -1;

  /** A stream read from a raw socket (which can stop reading): the ids of its events, in order, and the bytes read. */
  interface PausedStream {
    socket: Socket;
    received: string[];
    bytesRead: () => number;
  }
  const openPaused = async (sourceId: string, lastEventId?: string): Promise<PausedStream> => {
    const port = Number(new URL(ctx.system.origin).port);
    const socket: Socket = netConnect(port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    // The ids of the events received, in order (read from each chunk and the end of the one before it).
    const received: string[] = [];
    let opened = false;
    let tail = '';
    let bytes = 0;
    socket.on('data', (d: Buffer) => {
      bytes += d.length;
      const text = tail + d.toString('latin1');
      opened ||= text.includes(':sse-handshake');
      for (const m of text.matchAll(/\nid: ([^\n]+)\n/g)) if (received.at(-1) !== m[1]) received.push(m[1]);
      tail = text.slice(-200);
    });
    const resume = lastEventId ? `Last-Event-ID: ${lastEventId}\r\n` : '';
    socket.write(`GET /sse/dc/${sourceId}/emits HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ctx.user.apiKey}\r\n${resume}\r\n`);
    await eventually(async () => opened, { what: 'the stream to open' });
    socket.pause();
    return { socket, received, bytesRead: () => bytes };
  };

  /** Bytes the kernel holds on the connection of `socket`, at both ends (written by the api, not read by the client). */
  const queuedInKernel = async (socket: Socket): Promise<number> => {
    const ends = [socket.localPort, socket.remotePort].map((p) => p!.toString(16).toUpperCase().padStart(4, '0'));
    let bytes = 0;
    for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
      for (const line of (await readFile(file, 'utf8').catch(() => '')).split('\n').slice(1)) {
        const [, local, remote, , queues] = line.trim().split(/\s+/);
        const ports = [local, remote].map((a) => a?.split(':').at(-1));
        if (ports.join() === ends.join() || ports.join() === [...ends].reverse().join()) bytes += queues.split(':').reduce((n, h) => n + parseInt(h, 16), 0);
      }
    }
    return bytes;
  };

  /**
   * Once the api has taken what it will for a paused client, it holds at most one batch (BATCH_BYTES) beyond what the
   * kernel holds on the connection (loopback TCP grows its buffers to tens of MB) and what the client read. Each event
   * taken (`skipped` of them not written: seen before Last-Event-ID) is counted at its pad's size, less than its frame.
   * Before, the api pulled 256 events ahead of what the client read.
   */
  const heldToOneBatch = async (sourceId: string, stream: PausedStream, skipped = 0): Promise<void> => {
    await eventually(async () => (await deliveredToApi(sourceId)) > 0, { what: 'the first batch delivered to the api' });
    await new Promise((r) => setTimeout(r, 2000));
    const delivered = await deliveredToApi(sourceId);
    const inKernel = await queuedInKernel(stream.socket);
    expect(delivered).toBeLessThan(EVENTS);
    expect((delivered - skipped) * PAD.length - inKernel - stream.bytesRead()).toBeLessThanOrEqual(BATCH_BYTES);
  };

  it('holds at most one batch for it, and gives it every event, in order, once it reads again', async () => {
    const sourceId = await insertSource(ctx.system, ctx.user.id);
    const stream = await openPaused(sourceId);
    try {
      const ids: string[] = [];
      for (let i = 0; i < EVENTS; i++) ids.push((await ctx.emitter.emit(sourceId, ctx.user.id, { i, pad: PAD })).id);
      await heldToOneBatch(sourceId, stream);
      stream.socket.resume();
      await eventually(async () => stream.received.length >= EVENTS, { what: 'every event once the client reads', timeoutMs: 60_000 });
      expect(stream.received).toEqual(ids);
    } finally {
      stream.socket.destroy();
    }
  });

  it('holds at most one batch of a replay for it (Last-Event-ID), and gives it every later event, in order, once it reads again', async () => {
    const sourceId = await insertSource(ctx.system, ctx.user.id);
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i++) ids.push((await ctx.emitter.emit(sourceId, ctx.user.id, { i, pad: PAD })).id);
    // The stream's last message when it opens is another source's: the replay's last fetch goes on past it.
    await ctx.emitter.emit(await insertSource(ctx.system, ctx.user.id), ctx.user.id, { other: true });
    const stream = await openPaused(sourceId, ids[4]);
    try {
      await heldToOneBatch(sourceId, stream, 5);
      // Stored while the replay waits: its last fetch brings them too, or the live fetches after it.
      for (let i = 0; i < 3; i++) ids.push((await ctx.emitter.emit(sourceId, ctx.user.id, { live: i })).id);
      stream.socket.resume();
      await eventually(async () => stream.received.length >= ids.length - 5, { what: 'every later event once the client reads', timeoutMs: 60_000 });
      expect(stream.received).toEqual(ids.slice(5));
    } finally {
      stream.socket.destroy();
    }
  });
});
