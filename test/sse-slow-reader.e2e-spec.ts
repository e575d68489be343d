import { connect as netConnect, Socket } from 'node:net';
import { connect } from 'nats';
import { Names } from '@app/contracts';
import { createUser, TestUser } from './support/accounts';
import { natsAdmin } from './support/env';
import { eventually, startSystem, System } from './support/system';
import { Emitter, insertSource } from './events.helpers';

/** Events of about 300 KB: 100 of them are 30 MB, fifteen batches of what one stream takes at a time (2 MiB). */
const PAD = 'x'.repeat(300_000);
const EVENTS = 100;

/**
 * A stream whose client stops reading takes no more from JetStream than one batch: the api fetches the next
 * batch only once the client has read the last one. Before, each stream pulled 256 events ahead whatever the
 * client read, so a few paused readers of large events filled the api's memory and its NATS connection fell
 * behind until nats-server cut it (every stream and request of the api with it).
 */
describe('an event stream whose client does not read', () => {
  let system: System;
  let emitter: Emitter;
  let user: TestUser;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
    emitter = await Emitter.connect(system);
    user = createUser(system);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  /** Events the server has delivered to the api's consumer of this source's subject. */
  const deliveredToApi = async (sourceId: string): Promise<number> => {
    const nc = await connect(natsAdmin());
    try {
      const names = new Names(system.natsPrefix);
      const jsm = await nc.jetstreamManager();
      for await (const c of jsm.consumers.list(names.emitsStream)) {
        if (c.config.filter_subject === names.emit(sourceId) || c.config.filter_subjects?.includes(names.emit(sourceId))) return c.delivered.consumer_seq;
      }
      return -1;
    } finally {
      await nc.close();
    }
  };

  it('holds at most one batch for it, and gives it every event, in order, once it reads again', async () => {
    const sourceId = await insertSource(system, user.id);
    const port = Number(new URL(system.origin).port);
    const socket: Socket = netConnect(port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    // The ids of the events received, in order (read from each chunk and the end of the one before it).
    const received: string[] = [];
    let opened = false;
    let tail = '';
    socket.on('data', (d: Buffer) => {
      const text = tail + d.toString('latin1');
      opened ||= text.includes(':sse-handshake');
      for (const m of text.matchAll(/\nid: ([^\n]+)\n/g)) if (received.at(-1) !== m[1]) received.push(m[1]);
      tail = text.slice(-200);
    });
    socket.write(`GET /sse/dc/${sourceId}/emits HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${user.apiKey}\r\n\r\n`);
    await eventually(async () => opened, { what: 'the stream to open' });
    socket.pause();
    try {
      const ids: string[] = [];
      for (let i = 0; i < EVENTS; i++) ids.push((await emitter.emit(sourceId, user.id, { i, pad: PAD })).id);
      await eventually(async () => (await deliveredToApi(sourceId)) > 0, { what: 'the first batch delivered to the api' });
      await new Promise((r) => setTimeout(r, 2000));
      // What the api took: what the sockets' kernel buffers hold (loopback TCP grows them to about 10 MB) and one
      // batch of 2 MiB. Before, the api pulled all 100 (256 ahead of what the client read).
      expect(await deliveredToApi(sourceId)).toBeLessThanOrEqual(EVENTS / 2);

      socket.resume();
      await eventually(async () => received.length >= EVENTS, { what: 'every event once the client reads', timeoutMs: 30_000 });
      expect(received).toEqual(ids);
    } finally {
      socket.destroy();
    }
  });
});
