import pino from 'pino';
import { Registry } from 'prom-client';
import type { DesiredSourceState, DesiredWorkflowState } from '@app/contracts';
import { RunnerMetrics } from '../ops/runner-metrics';
import type { ActorDeps } from '../actors/actor-deps';
import { type ActorState, type ActorStateStore, StateConflictError, type StoredState } from '../actors/actor-state';
import { WorkflowActor } from './workflow-actor';

/** The `source-state` bucket in memory; its first `failLoads` reads fail as NATS does while it elects a leader. */
class FlakyStore implements ActorStateStore {
  data = new Map<string, StoredState>();
  rev = 0;
  constructor(public failLoads: number) {}
  async load(id: string) {
    if (this.failLoads-- > 0) throw new Error('TIMEOUT');
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

const timerWorkflow = (rev: number): DesiredSourceState =>
  ({
    kind: 'workflow', workflowId: 'p_1', ownerId: 'u_1', userId: 'u_1', rev, active: true, deploymentId: 'd_1',
    trigger: { type: 'timer', schedule: { intervalSeconds: 60 } }, steps: [], secrets: {}, runTimeoutMs: 1000,
    updatedAtMs: 0, codeHash: 'h', codeHashes: ['h'],
  }) satisfies DesiredWorkflowState as unknown as DesiredSourceState;

describe('WorkflowActor', () => {
  it('loads its state again after a read that failed (NATS unavailable for a moment), instead of never', async () => {
    const store = new FlakyStore(1);
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
});
