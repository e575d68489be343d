import pino from 'pino';
import { Registry } from 'prom-client';
import type { DesiredSourceState, DesiredWorkflowState } from '@app/contracts';
import { RunnerMetrics } from '../ops/runner-metrics';
import type { ActorDeps } from '../actors/actor-deps';
import { MemoryStore } from '../actors/memory-state-store.spec-helper';
import { WorkflowActor } from './workflow-actor';

const timerWorkflow = (rev: number): DesiredSourceState =>
  ({
    kind: 'workflow', workflowId: 'p_1', ownerId: 'u_1', userId: 'u_1', rev, active: true, deploymentId: 'd_1',
    trigger: { type: 'timer', schedule: { intervalSeconds: 60 } }, steps: [], secrets: {}, runTimeoutMs: 1000,
    updatedAtMs: 0, codeHash: 'h', codeHashes: ['h'],
  }) satisfies DesiredWorkflowState as unknown as DesiredSourceState;

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
});
