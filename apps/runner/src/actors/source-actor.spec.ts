import pino from 'pino';
import { Registry } from 'prom-client';
import type { DesiredSourceState, EmittedEvent, HttpResponseMessage, UsageRecord } from '@app/contracts';
import type { ExecuteResult, ExecuteTask } from '@app/sandbox';
import { RunnerMetrics } from '../ops/runner-metrics';
import type { ActorDeps, InvocationDelivery } from './actor-deps';
import { ActorState, ActorStateStore, StateConflictError, StoredState } from './actor-state';
import { ComponentCache } from './code-cache';
import { SourceActor } from './source-actor';

class MemoryStore implements ActorStateStore {
  data = new Map<string, StoredState>();
  rev = 0;
  async load(id: string) {
    const s = this.data.get(id);
    return s ? structuredClone(s) : null;
  }
  async save(id: string, state: ActorState, revision: number) {
    if ((this.data.get(id)?.revision ?? 0) !== revision) throw new StateConflictError('conflict');
    this.data.set(id, { state: structuredClone(state), revision: ++this.rev });
    return this.rev;
  }
  async remove(id: string) {
    this.data.delete(id);
  }
}

type Behaviour = (task: ExecuteTask, respond: (r: { status: number; body?: string }) => void) => Partial<ExecuteResult>;

function setup(behaviour: Behaviour, dedupe?: string, hooks?: string[], config: Partial<ActorDeps['config']> = {}) {
  const calls: ExecuteTask[] = [];
  const events: EmittedEvent[] = [];
  const usage: UsageRecord[] = [];
  const replies: HttpResponseMessage[] = [];
  const store = new MemoryStore();
  const executor = {
    execute: async (task: ExecuteTask, opts: { onResponse?: (r: { status: number; body?: string }) => void }) => {
      calls.push(task);
      const r = behaviour(task, (res) => opts.onResponse?.(res));
      return { emits: [], dbWrites: {}, logs: [], durationMs: 1, ...r } as ExecuteResult;
    },
    describe: async () => ({ descriptor: { props: [{ name: 'n', type: 'integer', default: 7 }], methods: [], hooks: hooks ?? ['deploy', 'activate', 'deactivate'], hasRun: true, dependencies: [], format: 'cjs' as const, dedupe } }),
  };
  const deps: ActorDeps = {
    executor,
    components: new ComponentCache({ get: async () => 'module.exports = {}' }, executor),
    store,
    publisher: { publishEvents: async (e) => void events.push(...e), publishUsage: (u) => void usage.push(u), reply: (_s, r) => void replies.push(r) },
    timers: { start: () => undefined, stop: () => undefined },
    metrics: new RunnerMetrics(new Registry()),
    logger: pino({ level: 'silent' }),
    config: { secretsKey: Buffer.alloc(32), runTimeoutMs: 1000, maxRunTimeoutMs: 1000, dbMaxBytes: 1000, eventMaxBytes: 1000, emitsPerInvocation: 10, ...config },
  };
  const gone: string[] = [];
  const actor = (fence = 'r1#1') => new SourceActor('dc_1', 0, fence, deps, (_a, why) => void gone.push(why));
  return { calls, events, usage, replies, store, actor, gone };
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

  it('update runs deactivate with the old props then activate with the new; inactive skips runs; delete deactivates and removes state', async () => {
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
    a.setDesired(desired(4, true, { n: 2 }));
    a.delete();
    await settle();
    expect(t.calls.slice(5).map((c) => c.method)).toEqual(['activate', 'deactivate']);
    expect(t.store.data.has('dc_1')).toBe(false);
    expect(t.gone).toEqual(['deleted']);
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
    expect(small.calls.find((c) => c.method === 'run')?.limits.dbMaxBytes).toBe(875);

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
