import pino from 'pino';
import { Registry } from 'prom-client';
import type { DesiredSourceState, EmittedEvent, HttpResponseMessage, UsageRecord } from '@app/contracts';
import type { ExecuteBatchOutcome, ExecuteBatchTask, ExecuteResult, ExecuteTask } from '@app/sandbox';
import { RunnerMetrics } from '../ops/runner-metrics';
import { type ActorDeps, type EmitUnit, emitGroup, type InvocationDelivery } from './actor-deps';
import { StateConflictError } from './actor-state';
import { MemoryStore } from './memory-state-store.spec-helper';
import { ComponentCache } from './code-cache';
import { SourceActor } from './source-actor';

type Behaviour = (task: ExecuteTask, respond: (r: { status: number; body?: string }) => void) => Partial<ExecuteResult> | Promise<Partial<ExecuteResult>>;

function setup(behaviour: Behaviour, dedupe?: string, hooks?: string[], config: Partial<ActorDeps['config']> = {}, batchFails = false) {
  const calls: ExecuteTask[] = [];
  const batches: string[][] = [];
  const events: EmittedEvent[] = [];
  const units: EmitUnit[][] = [];
  const usage: UsageRecord[] = [];
  const retired: string[][] = [];
  const replies: HttpResponseMessage[] = [];
  const store = new MemoryStore();
  const executor = {
    execute: async (task: ExecuteTask, opts: { onResponse?: (r: { status: number; body?: string }) => void }) => {
      calls.push(task);
      const r = await behaviour(task, (res) => opts.onResponse?.(res));
      return { emits: [], dbWrites: {}, logs: [], durationMs: 1, ...r } as ExecuteResult;
    },
    // Runs the items one after the other with the db threaded through, as the sandbox does (libs/sandbox/src/execute-batch.spec.ts).
    executeBatch: async (task: ExecuteBatchTask, opts: { onResponse?: (i: number, r: { status: number; body?: string }) => void }): Promise<ExecuteBatchOutcome> => {
      batches.push(task.items.map((i) => i.invocationId));
      if (batchFails) return { failed: { name: 'SandboxCrashError', message: 'the sandbox was killed' } };
      let db = task.db;
      const results = task.items.map((item, i) => {
        const one: ExecuteTask = { ...task, kind: 'execute', method: 'run', invocationId: item.invocationId, event: item.event, db };
        const r = { emits: [], dbWrites: {}, logs: [], durationMs: 1, ...(behaviour(one, (res) => opts.onResponse?.(i, res)) as Partial<ExecuteResult>) } as ExecuteResult;
        db = { ...db, ...r.dbWrites };
        return r;
      });
      return { results };
    },
    describe: async () => ({ descriptor: { props: [{ name: 'n', type: 'integer', default: 7 }], methods: [], hooks: hooks ?? ['deploy', 'activate', 'deactivate'], hasRun: true, dependencies: [], format: 'cjs' as const, dedupe } }),
    retireSandboxes: (accounts: readonly string[]) => retired.push([...accounts]),
  };
  const deps: ActorDeps = {
    executor,
    components: new ComponentCache({ get: async () => 'module.exports = {}' }, executor),
    store,
    publisher: {
      publishEvents: async (e) => void events.push(...e),
      publishUnits: async (us) => {
        units.push(us);
        for (const u of us) events.push(...('group' in u ? u.runs.flatMap((r) => r.events) : u.events));
      },
      withinBudgets: async () => undefined,
      publishUsage: (u) => void usage.push(u), reply: (_s, r) => void replies.push(r) },
    timers: { start: () => undefined, stop: () => undefined, processed: () => undefined },
    metrics: new RunnerMetrics(new Registry()),
    logger: pino({ level: 'silent' }),
    config: { secretsKey: Buffer.alloc(32), runTimeoutMs: 1000, maxRunTimeoutMs: 1000, dbMaxBytes: 1000, eventMaxBytes: 1000, emitsPerInvocation: 10, subscriptionMaxDepth: 16, subscriptionChainMaxRuns: 100, ...config },
  };
  const gone: string[] = [];
  const actor = (fence = 'r1#1') => new SourceActor('dc_1', 0, fence, deps, (_a, why) => void gone.push(why));
  return { calls, batches, events, units, usage, replies, store, actor, gone, retired };
}

const desired = (rev: number, active = true, props: Record<string, unknown> = {}): DesiredSourceState => ({
  sourceId: 'dc_1', ownerId: 'u_1', userId: 'u_1', rev, active, componentId: 'sc_1', codeHash: 'h', configuredProps: props, runTimeoutMs: 1000, updatedAtMs: 0,
});

function delivery(id: string, extra: Partial<InvocationDelivery['msg']> = {}) {
  const d = { acked: false, naked: false };
  const del: InvocationDelivery = {
    msg: { invocationId: id, sourceId: 'dc_1', kind: 'manual', event: { id }, createdAtMs: 0, ...extra },
    redelivered: false,
    ack: () => void (d.acked = true),
    nak: () => void (d.naked = true),
  };
  return { del, d };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('SourceActor', () => {
  it('runs deploy then activate, applies prop defaults, and runs invocations one at a time in order', async () => {
    const t = setup((task) => (task.method === 'run' ? { emits: [{ event: task.event, meta: {} }], dbWrites: { last: (task.event as { id: string }).id } } : {}));
    const a = t.actor();
    a.setDesired(desired(1));
    const invs = ['i1', 'i2', 'i3'].map((id) => delivery(id));
    invs.forEach((x) => a.invoke(x.del));
    await settle();
    expect(t.calls.map((c) => c.method)).toEqual(['deploy', 'activate', 'run', 'run', 'run']);
    expect(t.calls[2].props).toEqual({ n: 7 });
    expect(t.calls[4].db).toEqual({ last: 'i2' });
    expect(invs.every((x) => x.d.acked)).toBe(true);
    expect(t.events.map((e) => e.event)).toEqual([{ id: 'i1' }, { id: 'i2' }, { id: 'i3' }]);
    expect(t.usage.map((u) => u.invocationId)).toEqual(['i1', 'i2', 'i3']);
    expect(t.store.data.get('dc_1')?.state).toMatchObject({ appliedRev: 1, deployed: true, active: true, db: { last: 'i3' } });
  });

  it("update runs deactivate with the old props then activate with the new; inactive skips runs; delete deactivates, removes state and retires the owner's sandbox process", async () => {
    const t = setup(() => ({}));
    const a = t.actor();
    a.setDesired(desired(1, true, { n: 1 }));
    a.setDesired(desired(2, true, { n: 2 }));
    a.setDesired(desired(3, false, { n: 2 }));
    const inv = delivery('i1');
    a.invoke(inv.del);
    await settle();
    expect(t.calls.map((c) => `${c.method}:${c.props.n}`)).toEqual(['deploy:1', 'activate:1', 'deactivate:1', 'activate:2', 'deactivate:2']);
    expect(inv.d.acked).toBe(true);
    expect(t.retired).toEqual([]);
    a.setDesired(desired(4, true, { n: 2 }));
    a.delete();
    await settle();
    expect(t.calls.slice(5).map((c) => c.method)).toEqual(['activate', 'deactivate']);
    expect(t.store.data.has('dc_1')).toBe(false);
    expect(t.gone).toEqual(['deleted']);
    // The deactivate hook ran the deleted code in the account's sandbox: what it left behind there goes too.
    expect(t.retired).toEqual([['u_1']]);
  });

  it('deactivates on an update and on delete after the source was deactivated, reactivated and run', async () => {
    const t = setup((task) => (task.method === 'run' ? { emits: [{ event: task.event, meta: {} }] } : {}));
    const a = t.actor();
    a.setDesired(desired(1, true, { n: 1 }));
    a.setDesired(desired(2, false, { n: 1 }));
    a.setDesired(desired(3, true, { n: 1 }));
    a.invoke(delivery('i1').del);
    await settle();
    a.setDesired(desired(4, true, { n: 2 }));
    await settle();
    a.delete();
    await settle();
    expect(t.calls.map((c) => `${c.method}:${c.props.n}`)).toEqual(['deploy:1', 'activate:1', 'deactivate:1', 'activate:1', 'run:1', 'deactivate:1', 'activate:2', 'deactivate:2']);
  });

  it('records a throwing hook as an $errors event and keeps going', async () => {
    const t = setup((task) => (task.method === 'deploy' ? { error: { name: 'Error', message: 'deploy broke' } } : {}));
    const a = t.actor();
    a.setDesired(desired(1));
    const inv = delivery('i1');
    a.invoke(inv.del);
    await settle();
    expect(t.calls.map((c) => c.method)).toEqual(['deploy', 'activate', 'run']);
    expect(t.events[0]).toMatchObject({ name: '$errors', event: { error: { message: 'deploy broke' } } });
    expect(inv.d.acked).toBe(true);
  });

  it('is fenced: a stale owner cannot write after a new owner loaded the state', async () => {
    const t = setup(() => ({ dbWrites: { k: 1 } }));
    const old = t.actor('r1#1');
    old.setDesired(desired(1));
    await settle();
    const fresh = t.actor('r2#5');
    fresh.setDesired(desired(1));
    await settle();
    expect(t.store.data.get('dc_1')?.state.fence).toBe('r2#5');
    const inv = delivery('late');
    old.invoke(inv.del);
    await settle();
    expect(inv.d.acked).toBe(false);
    expect(inv.d.naked).toBe(true);
    expect(t.gone).toContain('fenced');
  });

  it('keeps the desired state it was given when it is fenced while loading, so that it can be rebuilt', async () => {
    const t = setup(() => ({}));
    const first = t.actor('r1#1');
    first.setDesired(desired(1));
    await settle();
    // Every write of this replica's fence loses to another writer (a replica taking the partition over meanwhile).
    const save = t.store.save.bind(t.store);
    t.store.save = async (id, state, revision) => {
      if (state.fence === 'r2#5') throw new StateConflictError('conflict');
      return save(id, state, revision);
    };
    const fresh = t.actor('r2#5');
    fresh.setDesired(desired(2));
    await new Promise((r) => setTimeout(r, 1500));
    expect(t.gone).toEqual(['fenced']);
    expect(fresh.lastDesired?.rev).toBe(2);
  });

  it('writes no fence once stopped while loading (its partition was lost): a new owner keeps the state', async () => {
    const t = setup(() => ({}));
    t.actor('r0#1').setDesired(desired(1));
    await settle();
    const stale = t.actor('r1#1');
    stale.setDesired(desired(1));
    void stale.stop(false);
    await settle();
    expect(t.store.data.get('dc_1')?.state.fence).toBe('r0#1');
    expect(t.gone).toEqual([]);
  });

  it('deletes again after removing its state failed (NATS unavailable for a moment), without running deactivate twice', async () => {
    const t = setup(() => ({}));
    const a = t.actor();
    a.setDesired(desired(1));
    await settle();
    const remove = t.store.remove.bind(t.store);
    let failures = 1;
    t.store.remove = async (id) => {
      if (failures-- > 0) throw new Error('TIMEOUT');
      return remove(id);
    };
    a.delete();
    await new Promise((r) => setTimeout(r, 1500));
    expect(t.store.data.has('dc_1')).toBe(false);
    expect(t.gone).toEqual(['deleted']);
    expect(t.calls.filter((c) => c.method === 'deactivate')).toHaveLength(1);
  });

  it('does not run a redelivered invocation that already finished', async () => {
    const t = setup(() => ({ dbWrites: { k: 1 } }));
    const a = t.actor();
    a.setDesired(desired(1));
    a.invoke(delivery('i1').del);
    const again = delivery('i1');
    a.invoke(again.del);
    await settle();
    expect(t.calls.filter((c) => c.method === 'run')).toHaveLength(1);
    expect(again.d.acked).toBe(true);
  });

  it("serves an HTTP request beside a running deploy hook; the request's db writes win over the hook's", async () => {
    let releaseDeploy: () => void = () => undefined;
    const deployGate = new Promise<void>((r) => (releaseDeploy = r));
    const t = setup(async (task) => {
      const count = task.db?.count as number | undefined;
      if (task.method === 'deploy') {
        await deployGate;
        return { dbWrites: count === undefined ? { count: 0 } : {} };
      }
      return task.method === 'run' ? { dbWrites: { count: (count ?? 0) + 1 } } : {};
    }, undefined, ['deploy']);
    const a = t.actor();
    a.setDesired(desired(1));
    await settle();
    const req = delivery('h1', { kind: 'http' });
    a.invoke(req.del);
    await settle();
    expect(req.d.acked).toBe(true);
    releaseDeploy();
    await settle();
    expect(t.store.data.get('dc_1')?.state.db).toEqual({ count: 1 });
    a.invoke(delivery('h2', { kind: 'http' }).del);
    await settle();
    expect(t.store.data.get('dc_1')?.state.db).toEqual({ count: 2 });
  });

  it('answers a waiting HTTP client from respond(), or with 502 when run never responds', async () => {
    const t = setup((task, respond) => {
      if ((task.event as { id: string }).id === 'r1') respond({ status: 201, body: 'made' });
      return {};
    });
    const a = t.actor();
    a.setDesired(desired(1));
    a.invoke(delivery('r1', { replyTo: 'resp.r1' }).del);
    a.invoke(delivery('r2', { replyTo: 'resp.r2' }).del);
    await settle();
    expect(t.replies[0]).toEqual({ status: 201, body: 'made' });
    expect(t.replies[1]).toMatchObject({ status: 502, body: expect.stringContaining('without calling respond') });
  });

  it('caps the db as the sandbox measures it (keys plus value JSON): writes under the cap persist, over it they are an $errors event', async () => {
    const writes = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'x'.repeat(18)]));
    const t = setup((task) => (task.method === 'run' ? { dbWrites: writes((task.event as { n: number }).n) } : {}));
    const a = t.actor();
    a.setDesired(desired(1));
    a.invoke(delivery('fits', { event: { n: 40 } }).del); // 40 × 23 bytes = 920 (its JSON text is 1,081)
    await settle();
    expect(t.events.filter((e) => e.name === '$errors')).toEqual([]);
    expect(Object.keys(t.store.data.get('dc_1')?.state.db ?? {})).toHaveLength(40);
    a.invoke(delivery('over', { event: { n: 50 } }).del); // 1,150 bytes
    await settle();
    const [err] = t.events.filter((e) => e.name === '$errors');
    expect(err.event).toMatchObject({ error: { name: 'DbSizeLimitError', message: expect.stringContaining('the limit is 1000 bytes') }, original_event: { n: 50 } });
    expect(Object.keys(t.store.data.get('dc_1')?.state.db ?? {})).toHaveLength(40);
  });

  it('keeps the state within one NATS message: the sandbox gets a lowered db cap, and writes that would overflow it are an $errors event', async () => {
    const writes = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'x'.repeat(18)]));
    const small = setup(() => ({}), undefined, undefined, { stateMaxBytes: 1000 });
    const a = small.actor();
    a.setDesired(desired(1));
    a.invoke(delivery('i0').del);
    await settle();
    // 1000 less the room kept for the rest of the state (1000 / 8) and the configured props' JSON (`{}`, 2 bytes).
    expect(small.calls.find((c) => c.method === 'run')?.limits.dbMaxBytes).toBe(873);

    const t = setup((task) => (task.method === 'run' ? { dbWrites: writes((task.event as { n: number }).n) } : {}), undefined, undefined, { stateMaxBytes: 2200 });
    const b = t.actor();
    b.setDesired(desired(1));
    const fits = delivery('fits', { event: { n: 10 } });
    b.invoke(fits.del);
    await settle();
    expect(Object.keys(t.store.data.get('dc_1')?.state.db ?? {})).toHaveLength(10);
    const over = delivery('over', { event: { n: 40 } }); // 920 bytes by the db measure (under DB_MAX_BYTES), but the state would not fit
    b.invoke(over.del);
    await settle();
    expect(over.d.acked).toBe(true);
    const [err] = t.events.filter((e) => e.name === '$errors');
    expect(err.event).toMatchObject({ error: { name: 'DbSizeLimitError', message: expect.stringContaining('more than one NATS message holds (2200 bytes)') }, original_event: { n: 40 } });
    expect(Object.keys(t.store.data.get('dc_1')?.state.db ?? {})).toHaveLength(10);
  });

  it('applies dedupe across invocations with the persisted cache', async () => {
    const t = setup((task) => ({ emits: [1, 2, 3].map((n) => ({ event: n, meta: { id: `${(task.event as { id: string }).id}-${n % 2}` } })) }), 'unique');
    const a = t.actor();
    a.setDesired(desired(1));
    a.invoke(delivery('x').del);
    a.invoke(delivery('x2').del);
    await settle();
    expect(t.events.filter((e) => e.name === '').map((e) => e.meta?.id)).toEqual(['x-1', 'x-0', 'x2-1', 'x2-0']);
    expect(t.store.data.get('dc_1')?.state.dedupe.unique).toEqual(['x-1', 'x-0', 'x2-1', 'x2-0']);
  });
});

describe('SourceActor without hooks', () => {
  it('does not call the sandbox for hooks the component does not define, and writes its state once', async () => {
    const t = setup(() => ({}), undefined, []);
    const saves: number[] = [];
    const save = t.store.save.bind(t.store);
    t.store.save = async (id, state, rev) => {
      saves.push(rev);
      return save(id, state, rev);
    };
    const a = t.actor();
    a.setDesired(desired(1));
    a.invoke(delivery('i1').del);
    await settle();
    expect(t.calls.map((c) => c.method)).toEqual(['run']);
    expect(saves).toEqual([0]);
    expect(t.store.data.get('dc_1')?.state).toMatchObject({ deployed: true, active: true, appliedRev: 1 });
  });
});

describe('SourceActor micro-batching', () => {
  const behaviour: Behaviour = (task, respond) => {
    if (task.method !== 'run') return {};
    const { id } = task.event as { id: string };
    if (task.invocationId === 'i2') return { error: { name: 'Error', message: 'i2 broke' } };
    respond({ status: 200, body: id });
    return { emits: [{ event: { id, before: task.db.last ?? null }, meta: { id: id === 'i4' ? 'same' : id } }], dbWrites: { last: id } };
  };
  const withReply = (id: string) => delivery(id, { kind: 'http', replyTo: `resp.${id}` });

  it('runs the invocations waiting in the mailbox as one task: db threaded, dedupe across them, errors and answers per invocation, one state write', async () => {
    const t = setup(behaviour, 'unique', undefined, { runBatchMaxInvocations: 64 });
    const a = t.actor();
    a.setDesired(desired(1));
    const first = delivery('i0', { event: { id: 'same' } });
    const invs = ['i1', 'i2', 'i3', 'i4'].map(withReply);
    [first, ...invs].forEach((x) => a.invoke(x.del));
    const revisionsBefore = t.store.rev;
    await settle();
    expect(t.batches).toEqual([['i0', 'i1', 'i2', 'i3', 'i4']]);
    expect(t.calls.map((c) => c.method)).toEqual(['deploy', 'activate']);
    expect(t.events.map((e) => [e.name, e.name === '$errors' ? (e.event as { error: { message: string } }).error.message : e.event])).toEqual([
      ['', { id: 'same', before: null }],
      ['', { id: 'i1', before: 'same' }],
      ['$errors', 'i2 broke'],
      ['', { id: 'i3', before: 'i1' }],
      // i4 emits with the dedupe id "same", which i0 (earlier in the same batch) already emitted: dropped.
    ]);
    // respond() answers at once; the failed invocation's client is answered when the batch ends.
    expect(t.replies.map((r) => `${r.status}:${r.body}`)).toEqual(['200:i1', '200:i3', '200:i4', '502:{"error":"the source failed before responding: i2 broke","code":"source_error"}']);
    expect([first, ...invs].every((x) => x.d.acked)).toBe(true);
    expect(t.usage.map((u) => u.invocationId)).toEqual(['i0', 'i1', 'i2', 'i3', 'i4']);
    expect(t.store.rev - revisionsBefore).toBe(4); // deploy, activate, the applied revision, and one write for the whole batch
    expect(t.store.data.get('dc_1')?.state).toMatchObject({ db: { last: 'i4' }, recent: ['i0', 'i1', 'i2', 'i3', 'i4'] });
  });

  it('runs a batch that failed as a whole one invocation at a time', async () => {
    const t = setup(behaviour, undefined, undefined, { runBatchMaxInvocations: 64 }, true);
    const a = t.actor();
    a.setDesired(desired(1));
    const invs = ['i1', 'i2', 'i3'].map(withReply);
    invs.forEach((x) => a.invoke(x.del));
    await settle();
    expect(t.batches).toEqual([['i1', 'i2', 'i3']]);
    expect(t.calls.filter((c) => c.method === 'run').map((c) => [c.invocationId, c.db])).toEqual([
      ['i1', {}],
      ['i2', { last: 'i1' }],
      ['i3', { last: 'i1' }],
    ]);
    expect(t.events.map((e) => e.name)).toEqual(['', '$errors', '']);
    expect(invs.every((x) => x.d.acked)).toBe(true);
  });

  it('never batches past a desired-state change, nor more than RUN_BATCH_MAX_INVOCATIONS', async () => {
    const t = setup(() => ({}), undefined, undefined, { runBatchMaxInvocations: 2 });
    const a = t.actor();
    a.setDesired(desired(1));
    ['a', 'b', 'c'].forEach((id) => a.invoke(delivery(id).del));
    a.setDesired(desired(2, true, { n: 1 }));
    a.invoke(delivery('d').del);
    await settle();
    expect(t.batches).toEqual([['a', 'b']]);
    expect(t.calls.map((c) => `${c.method}:${c.invocationId.split('.').pop()}`)).toEqual(['deploy:deploy', 'activate:activate', 'run:c', 'deactivate:deactivate', 'activate:activate', 'run:d']);
  });

  it('hands the runs of a message of several to the publisher as its group, in order beside loose events', async () => {
    const t = setup(behaviour, undefined, undefined, { runBatchMaxInvocations: 64 });
    const a = t.actor();
    a.setDesired(desired(1));
    const m1 = emitGroup('i1', false);
    const m2 = emitGroup('i4', false);
    const grouped = (id: string, group: ReturnType<typeof emitGroup>) => {
      const x = withReply(id);
      return { ...x, del: { ...x.del, group } };
    };
    const invs = [grouped('i1', m1), grouped('i2', m1), withReply('i3'), grouped('i4', m2)];
    invs.forEach((x) => a.invoke(x.del));
    await settle();
    expect(t.batches).toEqual([['i1', 'i2', 'i3', 'i4']]);
    const summary = t.units.flat().map((u) => ('group' in u ? { group: u.group.id, runs: u.runs.map((r) => [r.invocationId, r.events.map((e) => e.name)]) } : { loose: u.events.map((e) => e.emitId) }));
    expect(summary).toEqual([
      { group: 'i1', runs: [['i1', ['']], ['i2', ['$errors']]] },
      { loose: ['i3:e0'] },
      { group: 'i4', runs: [['i4', ['']]] },
    ]);
    expect(invs.every((x) => x.d.acked)).toBe(true);
  });
});
