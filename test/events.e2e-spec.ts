import { Client } from 'pg';
import { EmittedEvent } from '@app/contracts';
import { client, createUser, TestUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';
import { Emitter, insertSource, sql } from './events.helpers';

describe('event summaries', () => {
  let system: System;
  let emitter: Emitter;
  let user: TestUser;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    system = await startSystem({ EVENT_RETENTION: '5' }, { apps: ['api', 'delivery'] });
    emitter = await Emitter.connect(system);
    user = createUser(system);
    api = client(system, user.apiKey);
  });
  afterAll(async () => {
    await emitter?.close();
    await system?.stop();
  });

  const summaries = async (id: string, query = ''): Promise<{ status: number; body: any }> => api.get(`/sources/${id}/event_summaries${query}`); // eslint-disable-line @typescript-eslint/no-explicit-any

  it('lists emitted events newest first in the spec shape, keeping the last N per class', async () => {
    const src = await insertSource(system, user.id);
    const sent: EmittedEvent[] = [];
    for (let i = 0; i < 7; i++) sent.push(await emitter.emit(src, user.id, { n: i }));
    await emitter.emit(src, user.id, { msg: 'hello' }, { name: '$logs' });
    await emitter.emit(src, user.id, { error: { message: 'boom' } }, { name: '$errors' });
    const res = await eventually(async () => {
      const r = await summaries(src, '?limit=100');
      return r.body?.data?.length === 5 && r.body.data[0].id === sent[6].id ? r : undefined;
    }, { what: 'the last 5 events indexed' });
    expect(res.status).toBe(200);
    expect(res.body.page_info).toEqual({ total_count: 5, count: 5, start_cursor: expect.any(String), end_cursor: expect.any(String) });
    expect(res.body.data.map((d: { id: string }) => d.id)).toEqual(sent.slice(2).reverse().map((e) => e.id));
    expect(res.body.data[0]).toEqual({
      id: sent[6].id,
      indexed_at_ms: expect.any(Number),
      event: { n: 6 },
      metadata: { emit_id: sent[6].emitId, name: '', emitter_id: src },
    });
    // $logs and $errors may be indexed in a later batch than the emits.
    const logs = await eventually(async () => {
      const r = await summaries(src, '?event_name=$logs');
      return r.body?.data?.length ? r : undefined;
    }, { what: 'the $logs event indexed' });
    expect(logs.body.data).toEqual([expect.objectContaining({ event: { msg: 'hello' }, metadata: expect.objectContaining({ name: '$logs' }) })]);
    const errors = await eventually(async () => {
      const r = await summaries(src, '?event_name=%24errors');
      return r.body?.data?.length ? r : undefined;
    }, { what: 'the $errors event indexed' });
    expect(errors.body.data[0].event).toEqual({ error: { message: 'boom' } });
  });

  it('answers each event with its keys in the order they were emitted', async () => {
    const src = await insertSource(system, user.id);
    // Postgres's jsonb would answer { a, zz, zeta, nested: { b, aa } }: its keys shortest first, then in byte order.
    const data = { zeta: 1, zz: 'two', a: [3], nested: { b: true, aa: null } };
    const sent = await emitter.emit(src, user.id, data);
    const res = await eventually(async () => {
      const r = await summaries(src);
      return r.body?.data?.[0]?.id === sent.id ? r : undefined;
    }, { what: 'the event indexed' });
    expect(JSON.stringify(res.body.data[0].event)).toBe(JSON.stringify(data));
  });

  it('never lists more than EVENT_RETENTION of a class, even before the older ones are trimmed', async () => {
    const src = await insertSource(system, user.id);
    // Eight summaries written straight to Postgres: no delivery app trims them.
    for (let i = 1; i <= 8; i++) {
      await sql(system, `insert into event_summaries (emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms)
        values ($1, $2, $3, 0, '', 'emits', $4, $5, '', $6, '{}', 10, $3)`, [src, `${1_700_000_000_000 + i}-0`, 1_700_000_000_000 + i, user.id, `emit-${i}`, JSON.stringify({ n: i })]);
    }
    const res = await summaries(src, '?limit=100');
    expect(res.body.page_info.total_count).toBe(5);
    expect(res.body.data.map((d: { event: { n: number } }) => d.event.n)).toEqual([8, 7, 6, 5, 4]);
    const first = await summaries(src, '?limit=4');
    const rest = await summaries(src, `?limit=2&after=${encodeURIComponent(first.body.page_info.end_cursor)}`);
    expect(rest.body.data.map((d: { event: { n: number } }) => d.event.n)).toEqual([4]);
  });

  it('answers a page and its total_count from one snapshot while events are being indexed', async () => {
    const src = await insertSource(system, user.id);
    const writer = new Client({ connectionString: system.databaseUrl });
    await writer.connect();
    let writing = true;
    const written = (async () => {
      for (let i = 1; writing; i++) {
        await writer.query(`insert into event_summaries (emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms)
          values ($1, $2, $3, 0, '', 'emits', $4, $5, '', $6, '{}', 10, $3)`, [src, `${1_700_000_000_000 + i}-0`, 1_700_000_000_000 + i, user.id, `emit-${i}`, JSON.stringify({ n: i })]);
      }
    })();
    const seen: { listed: number; total: number }[] = [];
    try {
      for (let i = 0; i < 150; i++) {
        const res = await summaries(src, '?limit=100');
        seen.push({ listed: res.body.data.length, total: res.body.page_info.total_count });
      }
    } finally {
      writing = false;
      await written;
      await writer.end();
    }
    // Every page holds exactly the total it states, never more than EVENT_RETENTION.
    expect(seen.filter((s) => s.listed !== s.total || s.total > 5)).toEqual([]);
    expect(seen.at(-1)).toEqual({ listed: 5, total: 5 });
  });

  // The delivery app deletes them; with no delivery replica answering, the api itself.
  it.each([['the delivery app', false], ['the api, no delivery app running', true]])(
    'deletes a range without bringing back the summaries past EVENT_RETENTION that were not trimmed yet (%s)',
    async (_who, withoutDelivery) => {
      const src = await insertSource(system, user.id);
      // Eight summaries written straight to Postgres: 1–3 are past the retention of 5 and no trim removed them yet.
      for (let i = 1; i <= 8; i++) {
        await sql(system, `insert into event_summaries (emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms)
          values ($1, $2, $3, 0, '', 'emits', $4, $5, '', $6, '{}', 10, $3)`, [src, `${1_700_000_000_000 + i}-0`, 1_700_000_000_000 + i, user.id, `emit-${i}`, JSON.stringify({ n: i })]);
      }
      if (withoutDelivery) await system.stopApp('delivery');
      try {
        expect((await api.del(`/sources/${src}/events?start_id=${1_700_000_000_000 + 6}-0`)).status).toBe(202);
        const listed = async (): Promise<number[]> => (await summaries(src, '?limit=100')).body.data.map((d: { event: { n: number } }) => d.event.n);
        await eventually(async () => (await listed()).every((n) => n < 6), { what: 'events 6–8 deleted' });
        expect(await listed()).toEqual([5, 4]);
        const stored = await sql<{ n: number }>(system, 'select count(*)::int as n from event_summaries where emitter_id = $1', [src]);
        expect(stored[0].n).toBe(2);
      } finally {
        if (withoutDelivery) await system.startApp('delivery', 'delivery');
      }
    },
  );

  it('ends a page of full events (expand=event) where they reach 8 MiB together; the cursor gives the rest', async () => {
    const src = await insertSource(system, user.id);
    // Five summaries of 3 MiB each as the index records their size (the data itself kept small here).
    for (let i = 1; i <= 5; i++) {
      await sql(system, `insert into event_summaries (emitter_id, id, id_ms, id_seq, name, channel_class, owner_id, emit_id, summary, event, meta, size_bytes, indexed_at_ms)
        values ($1, $2, $3, 0, '', 'emits', $4, $5, '', $6, '{}', $7, $3)`, [src, `${1_700_000_000_000 + i}-0`, 1_700_000_000_000 + i, user.id, `emit-${i}`, JSON.stringify({ n: i }), 3 * 1024 * 1024]);
    }
    const ns = (res: { body: { data: { event: { n: number } }[] } }) => res.body.data.map((d) => d.event.n);
    const first = await summaries(src, '?limit=5&expand=event');
    expect([ns(first), first.body.page_info.total_count, first.body.page_info.count]).toEqual([[5, 4], 5, 2]);
    const second = await summaries(src, `?limit=5&expand=event&after=${first.body.page_info.end_cursor}`);
    expect(ns(second)).toEqual([3, 2]);
    const third = await summaries(src, `?limit=5&expand=event&after=${second.body.page_info.end_cursor}`);
    expect(ns(third)).toEqual([1]);
    // Newer pages (before) count from their cursor.
    const newer = await summaries(src, `?limit=5&expand=event&before=${third.body.page_info.start_cursor}`);
    expect(ns(newer)).toEqual([3, 2]);
    // Truncated to their markers, all five fit one page.
    expect((await summaries(src, '?limit=5')).body.data).toHaveLength(5);
  });

  it('trims the stored summaries of each class to EVENT_RETENTION, keeping the newest', async () => {
    const src = await insertSource(system, user.id);
    const stored = async (cls: string): Promise<number> => (await sql<{ n: number }>(system, `select count(*)::int as n from event_summaries where emitter_id = $1 and channel_class = $2`, [src, cls]))[0].n;
    const sent: EmittedEvent[] = [];
    for (let i = 0; i < 12; i++) sent.push(await emitter.emit(src, user.id, { n: i }));
    for (let i = 0; i < 7; i++) await emitter.emit(src, user.id, { msg: `line ${i}` }, { name: '$logs' });
    await eventually(async () => ((await stored('emits')) === 5 && (await stored('$logs')) === 5 ? true : undefined), { what: 'both classes trimmed to 5 rows' });
    const kept = await sql<{ id: string }>(system, `select id from event_summaries where emitter_id = $1 and channel_class = 'emits' order by id_ms, id_seq`, [src]);
    expect(kept.map((r) => r.id)).toEqual(sent.slice(7).map((e) => e.id));
  });

  it('pages with limit and cursors and filters custom channels', async () => {
    const src = await insertSource(system, user.id);
    expect((await summaries(src)).body).toEqual({ page_info: { total_count: 0, count: 0, start_cursor: '', end_cursor: '' }, data: [] });
    const a = await emitter.emit(src, user.id, { n: 1 });
    const b = await emitter.emit(src, user.id, { n: 2 }, { name: 'orders' });
    const c = await emitter.emit(src, user.id, { n: 3 });
    await eventually(async () => (await summaries(src)).body?.data?.length === 3, { what: 'indexing' });
    const first = await summaries(src, '?limit=2');
    expect(first.body.data.map((d: { id: string }) => d.id)).toEqual([c.id, b.id]);
    expect(first.body.page_info.total_count).toBe(3);
    const next = await summaries(src, `?limit=2&after=${first.body.page_info.end_cursor}`);
    expect(next.body.data.map((d: { id: string }) => d.id)).toEqual([a.id]);
    const back = await summaries(src, `?limit=2&before=${next.body.page_info.start_cursor}`);
    expect(back.body.data.map((d: { id: string }) => d.id)).toEqual([c.id, b.id]);
    expect((await summaries(src, '?event_name=orders')).body.data.map((d: { id: string }) => d.id)).toEqual([b.id]);
    expect((await summaries(src, '?event_name=')).body.data.map((d: { id: string }) => d.id)).toEqual([c.id, a.id]);
    expect((await summaries(src, '?limit=0')).status).toBe(400);
    expect((await summaries(src, '?limit=101')).status).toBe(400);
    expect((await summaries(src, '?after=garbage')).status).toBe(400);
    expect((await summaries(src, '?bogus=1')).status).toBe(400);
  });

  it('truncates event data over 1KB unless expand=event', async () => {
    const src = await insertSource(system, user.id);
    const big = { text: 'x'.repeat(5000) };
    await emitter.emit(src, user.id, big);
    const res = await eventually(async () => (await summaries(src)).body?.data?.[0], { what: 'indexing' });
    expect(res.event).toEqual({ $truncated: true, size_bytes: JSON.stringify(big).length, preview: JSON.stringify(big).slice(0, 1024) });
    expect((await summaries(src, '?expand=event')).body.data[0].event).toEqual(big);
  });

  it('drops an event whose channel name is too long to index, and goes on indexing every account\'s events', async () => {
    // The runner refuses such a name; an event that reaches EMITS anyway must not hold the router's batches.
    const hostile = await insertSource(system, user.id);
    const other = createUser(system);
    const victim = await insertSource(system, other.id);
    await emitter.emit(hostile, user.id, { poison: true }, { name: 'c'.repeat(300) });
    const fine = await emitter.emit(hostile, user.id, { fine: true }, { name: 'c'.repeat(255) });
    const theirs = await emitter.emit(victim, other.id, { theirs: true });
    const rows = async (id: string): Promise<{ id: string; name: string }[]> => sql(system, 'select id, name from event_summaries where emitter_id = $1 order by id', [id]);
    await eventually(async () => (await rows(victim)).length === 1 && (await rows(hostile)).length === 1, { what: 'both good events indexed' });
    expect(await rows(victim)).toEqual([{ id: theirs.id, name: '' }]);
    expect(await rows(hostile)).toEqual([{ id: fine.id, name: 'c'.repeat(255) }]);
  });

  it('returns 404 for a source that is not yours or does not exist', async () => {
    const other = createUser(system);
    const src = await insertSource(system, other.id);
    expect((await summaries(src)).status).toBe(404);
    expect((await summaries('dc_doesnotexist')).body).toEqual({ error: expect.any(String), code: 'not_found', details: { id: 'dc_doesnotexist' } });
    expect((await api.del(`/sources/${src}/events`)).status).toBe(404);
  });

  it('deletes all events, a start range, an end range, a closed range and one event (202, asynchronously)', async () => {
    const ids = async (src: string): Promise<string[]> => (await summaries(src, '?limit=100')).body.data.map((d: { id: string }) => d.id);
    const setup = async (): Promise<[string, string[]]> => {
      const src = await insertSource(system, user.id);
      const sent: string[] = [];
      for (let i = 0; i < 5; i++) sent.push((await emitter.emit(src, user.id, { i }, { idMs: 1_700_000_000_000 + i })).id);
      await eventually(async () => (await ids(src)).length === 5, { what: 'indexing' });
      return [src, sent];
    };
    const expectLeft = async (src: string, left: string[]): Promise<void> => {
      await eventually(async () => JSON.stringify(await ids(src)) === JSON.stringify([...left].reverse()), { what: `events ${left.join(',')} left` });
    };
    let [src, s] = await setup();
    expect((await api.del(`/sources/${src}/events`)).status).toBe(202);
    await expectLeft(src, []);
    [src, s] = await setup();
    expect((await api.del(`/sources/${src}/events?start_id=${s[3]}`)).status).toBe(202);
    await expectLeft(src, s.slice(0, 3));
    [src, s] = await setup();
    expect((await api.del(`/sources/${src}/events?end_id=${s[1]}`)).status).toBe(202);
    await expectLeft(src, s.slice(2));
    [src, s] = await setup();
    expect((await api.del(`/sources/${src}/events?start_id=${s[1]}&end_id=${s[3]}`)).status).toBe(202);
    await expectLeft(src, [s[0], s[4]]);
    [src, s] = await setup();
    expect((await api.del(`/sources/${src}/events?start_id=${s[2]}&end_id=${s[2]}`)).status).toBe(202);
    await expectLeft(src, [s[0], s[1], s[3], s[4]]);
    expect((await api.del(`/sources/${src}/events?start_id=nope`)).status).toBe(400);
    expect((await api.del(`/sources/${src}/events?start_id=${s[3]}&end_id=${s[1]}`)).status).toBe(400);
    // An empty id (a client's unset variable) is malformed, never "every event".
    for (const q of ['start_id=', 'end_id=', `start_id=${s[1]}&end_id=`]) {
      const res = await api.del(`/sources/${src}/events?${q}`);
      expect([q, res.status, res.body?.code]).toEqual([q, 400, 'invalid_request']);
    }
    const body = await fetch(`${system.origin}/v1/sources/${src}/events`, { method: 'DELETE', headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' }, body: '{"end_id":""}' });
    expect(body.status).toBe(400);
    await new Promise((r) => setTimeout(r, 500));
    await expectLeft(src, [s[0], s[1], s[3], s[4]]);
  });

  it("deletes from a start_id far in the future at once (nothing is stored then), and the account's next deletion does not wait behind it", async () => {
    const src = await insertSource(system, user.id);
    const kept = await emitter.emit(src, user.id, { kept: true });
    const other = await insertSource(system, user.id);
    await emitter.emit(other, user.id, { gone: true });
    await eventually(async () => (await summaries(src)).body.data?.length === 1 && (await summaries(other)).body.data?.length === 1, { what: 'indexing' });
    // 15 digits of milliseconds are an event id (the year 33658), past any time NATS reads: the scan of EMITS from
    // there failed after a minute of tries (`invalid json`), and the account's deletions waited meanwhile.
    expect((await api.del(`/sources/${src}/events?start_id=999999999999999-999999999`)).status).toBe(202);
    expect((await api.del(`/sources/${other}/events`)).status).toBe(202);
    await eventually(async () => (await summaries(other)).body.data?.length === 0, { what: "the account's deletion after the far-future one", timeoutMs: 20_000 });
    expect((await summaries(src)).body.data.map((d: { id: string }) => d.id)).toEqual([kept.id]);
  });

  it('answers 404 for the event summaries of an unknown workflow', async () => {
    const res = await api.get('/workflows/p_abc/event_summaries');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'workflow p_abc not found', code: 'not_found', details: { id: 'p_abc' } });
    // The route exists (a bad query is a 400), as `$errors` and percent-encoded as `%24errors`.
    for (const path of ['/workflows/p_abc/$errors/event_summaries', '/workflows/p_abc/%24errors/event_summaries']) {
      expect(await api.get(`${path}?limit=5`)).toEqual(expect.objectContaining({ status: 404, body: { error: 'workflow p_abc not found', code: 'not_found', details: { id: 'p_abc' } } }));
      expect((await api.get(`${path}?limit=0`)).status).toBe(400);
    }
    // Another channel is outside the path's declared form: 400 naming the parameter, whatever the id.
    expect((await api.get('/workflows/p_abc/$logs/event_summaries')).body).toEqual({ error: 'channel must be one of "$errors"', code: 'invalid_request', details: { in: 'path', field: 'channel', allowed: ['$errors'] } });
  });
});
