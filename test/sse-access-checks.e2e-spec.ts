import { Client } from 'pg';
import { apiOnlySystemWithEmitter } from './support/system-with-user';
import { eventually } from './support/system';
import { openStream } from './support/sse-stream';
import { insertSource } from './events.helpers';

/**
 * A stream checks its caller's access again at every keep-alive (and on every access change) and writes nothing
 * while a check is in flight. It waited for the check in the middle of reading a batch from JetStream, and a batch
 * whose fetch completed meanwhile dropped the events it still held: an event was lost whenever a check took longer
 * than the next event took to come (Postgres busy, a busy source). Here the checks are held up (the keys table locked
 * for a moment) while events come: once they answer, the stream shows every one, in order.
 */
describe('an event stream whose access check is slow', () => {
  const ctx = apiOnlySystemWithEmitter({ SSE_KEEPALIVE_MS: '100' });

  it('shows every event that came while the check waited', async () => {
    const src = await insertSource(ctx.system, ctx.user.id);
    const stream = await openStream(ctx.system, `/sse/dc/${src}/emits`, ctx.user.apiKey);
    await eventually(async () => stream.frames.filter((f) => f.comment).length >= 2, { what: 'keep-alives' });
    const pg = new Client({ connectionString: ctx.system.databaseUrl });
    await pg.connect();
    await pg.query('begin');
    await pg.query('lock table api_keys in access exclusive mode');
    await new Promise((r) => setTimeout(r, 300));
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await ctx.emitter.emit(src, ctx.user.id, { i })).id);
    await new Promise((r) => setTimeout(r, 1000));
    await pg.query('commit');
    await pg.end();
    const shown = () => stream.frames.filter((f) => f.data).map((f) => f.id);
    await eventually(async () => (shown().length >= 40 ? true : undefined), { what: 'the 40 events', timeoutMs: 15_000 }).catch(() => undefined);
    expect(shown()).toEqual(ids);
    stream.close();
  });
});
