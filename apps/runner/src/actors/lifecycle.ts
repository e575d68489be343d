import type { DesiredSourceState } from '@app/contracts';
import type { ActorState, Hook } from './actor-state';

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
