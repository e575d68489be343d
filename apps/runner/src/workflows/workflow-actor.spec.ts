import pino from 'pino';
import { Registry } from 'prom-client';
import type { DesiredSourceState, DesiredWorkflowState, EmittedEvent } from '@app/contracts';
import { PublishUnavailableError } from '@app/nats';
import { RunnerMetrics } from '../ops/runner-metrics';
import type { ActorDeps } from '../actors/actor-deps';
import { MemoryStore } from '../actors/memory-state-store.spec-helper';
import { HANDLING_ATTEMPTS, WorkflowActor } from './workflow-actor';

const timerWorkflow = (rev: number): DesiredSourceState =>
  ({
    kind: 'workflow', workflowId: 'p_1', ownerId: 'u_1', userId: 'u_1', rev, active: true, deploymentId: 'd_1',
    trigger: { type: 'timer', schedule: { intervalSeconds: 60 } }, steps: [], secrets: {}, runTimeoutMs: 1000,
    updatedAtMs: 0, codeHash: 'h', codeHashes: ['h'],
  }) satisfies DesiredWorkflowState as unknown as DesiredSourceState;

const manualWorkflow = { ...(timerWorkflow(1) as unknown as DesiredWorkflowState), trigger: { type: 'manual' } } as unknown as DesiredSourceState;

/** An actor of `manualWorkflow` whose publishing of a run's events throws `failure` until `failing` says otherwise. */
function failingActor(failure: () => Error, failing: (events: EmittedEvent[]) => boolean) {
  const published: EmittedEvent[] = [];
  const usage: { computeMs: number }[] = [];
  const deps = {
    store: new MemoryStore(),
    timers: { start: () => undefined, stop: () => undefined, processed: () => undefined },
    metrics: new RunnerMetrics(new Registry()),
    logger: pino({ level: 'silent' }),
    config: { eventMaxBytes: 64 * 1024 },
    publisher: {
      publishEvents: async (events: EmittedEvent[]) => {
        if (failing(events)) throw failure();
        published.push(...events);
      },
      publishUsage: (u: { computeMs: number }) => void usage.push(u),
    },
  } as unknown as ActorDeps;
  const actor = new WorkflowActor('p_1', 0, 'r1#1', deps, () => undefined, { publishSends: async () => undefined } as never);
  actor.setDesired(manualWorkflow);
  const settled: string[] = [];
  const deliver = () => actor.invoke({
    msg: { invocationId: 'i_1', sourceId: 'p_1', kind: 'manual', event: { n: 1 }, createdAtMs: 0 },
    redelivered: settled.length > 0,
    ack: () => void settled.push('ack'),
    // Handed back: delivered again at once (JetStream would a second later).
    nak: () => {
      settled.push('nak');
      if (settled.length < 50) setImmediate(deliver);
    },
  });
  return { actor, published, usage, settled, deliver };
}

const until = async (done: () => boolean): Promise<void> => {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('WorkflowActor', () => {
  it('loads its state again after a read that failed (NATS unavailable for a moment), instead of never', async () => {
    const store = new MemoryStore(1);
    const started: string[] = [];
    const deps = {
      store,
      timers: { start: (id: string) => void started.push(id), stop: () => undefined, processed: () => undefined },
      metrics: new RunnerMetrics(new Registry()),
      logger: pino({ level: 'silent' }),
      config: {},
    } as unknown as ActorDeps;
    const actor = new WorkflowActor('p_1', 0, 'r1#1', deps, () => undefined, { publishSends: async () => undefined } as never);
    actor.setDesired(timerWorkflow(1));
    for (let i = 0; i < 300 && !started.length; i++) await new Promise((r) => setTimeout(r, 10));
    expect(started).toEqual(['p_1']);
    expect(store.data.get('p_1')?.state.fence).toBe('r1#1');
    await actor.stop(false);
  });

  it(`records a run whose handling threw ${HANDLING_ATTEMPTS} times as failed (RunnerError), counts it and acknowledges it`, async () => {
    const { actor, published, usage, settled, deliver } = failingActor(() => new Error('boom'), (events) => !events.some((e) => e.name === '$errors'));
    deliver();
    await until(() => settled.includes('ack'));
    expect(settled).toEqual([...Array(HANDLING_ATTEMPTS - 1).fill('nak'), 'ack']);
    const error = published.find((e) => e.name === '$errors');
    expect(error?.summary).toBe('trigger: RunnerError: the runner could not handle this run: boom');
    expect(published.find((e) => e.name === '$logs')?.event).toMatchObject({ k: 'run', run: { status: 'error' } });
    expect(usage).toHaveLength(1);
    await actor.stop(false);
  });

  it('keeps handing back a run whose handling fails while NATS is unavailable, and runs it once NATS answers', async () => {
    let failures = 0;
    const { actor, published, settled, deliver } = failingActor(() => new PublishUnavailableError('publish not acknowledged within 10000 ms'), () => ++failures <= 3 * HANDLING_ATTEMPTS);
    deliver();
    await until(() => settled.includes('ack'));
    expect(settled).toEqual([...Array(3 * HANDLING_ATTEMPTS).fill('nak'), 'ack']);
    expect(published.some((e) => e.name === '$errors')).toBe(false);
    await actor.stop(false);
  });
});
