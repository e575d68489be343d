import { type DesiredSourceState, fnv1a } from '@app/contracts';
import type { ActorState, Hook } from './actor-state';
import type { ComponentCache } from './code-cache';
import { type TimerSpec, timerSpecOf } from './props';
import { specKey, type TimerState } from '../timers/timer-slots';

/**
 * The hooks still to run to bring a source from its applied state to the
 * desired revision. Planned from the persisted flags, so a replica resuming a
 * half-done transition runs only the rest:
 * new → deploy, activate; update (any new revision while active) →
 * deactivate (old code and props), activate (new ones); active false →
 * deactivate; active true again → activate.
 */
export function planLifecycle(state: ActorState, desired: DesiredSourceState): Hook[] {
  if (desired.rev <= state.appliedRev) return [];
  if (!state.deployed) return desired.active ? ['deploy', 'activate'] : ['deploy'];
  const steps: Hook[] = [];
  if (state.active) steps.push('deactivate');
  if (desired.active) steps.push('activate');
  return steps;
}

/**
 * The timer an active source runs, with its slot state (kept while the
 * schedule is unchanged). Interval timers get a per-source phase so that
 * sources deployed together do not all fire in the same instant.
 */
export async function timerFor(sourceId: string, desired: DesiredSourceState, state: ActorState, components: ComponentCache, now: () => number): Promise<{ spec: TimerSpec; state: TimerState } | undefined> {
  if (!desired.active || !state.active || !state.codeHash) return undefined;
  const component = await components.get(state.codeHash, desired.ownerId);
  const spec = timerSpecOf(state.configuredProps ?? {}, component.descriptor.props, desired.timerProp);
  if (!spec) return undefined;
  if (state.timer && state.timer.specKey === specKey(spec)) return { spec, state: state.timer };
  const phase = 'intervalSeconds' in spec ? fnv1a(sourceId) % (spec.intervalSeconds * 1000) : 0;
  return { spec, state: { anchorMs: now() - phase, specKey: specKey(spec) } };
}
