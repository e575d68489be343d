import type { DesiredSourceState } from '@app/contracts';
import { emptyState } from './actor-state';
import { planLifecycle } from './lifecycle';

const desired = (rev: number, active = true): DesiredSourceState => ({
  sourceId: 'dc_1', ownerId: 'u_1', userId: 'u_1', rev, active, componentId: 'sc_1', codeHash: 'h', configuredProps: {}, runTimeoutMs: 1000, updatedAtMs: 0,
});

describe('lifecycle plan', () => {
  const s = emptyState('f');
  it('new source: deploy then activate (deploy only when created inactive)', () => {
    expect(planLifecycle(s, desired(1))).toEqual(['deploy', 'activate']);
    expect(planLifecycle(s, desired(1, false))).toEqual(['deploy']);
  });
  it('update: deactivate then activate; same revision: nothing', () => {
    const applied = { ...s, deployed: true, active: true, appliedRev: 1 };
    expect(planLifecycle(applied, desired(2))).toEqual(['deactivate', 'activate']);
    expect(planLifecycle(applied, desired(1))).toEqual([]);
  });
  it('active false runs deactivate; active true again runs activate', () => {
    expect(planLifecycle({ ...s, deployed: true, active: true, appliedRev: 1 }, desired(2, false))).toEqual(['deactivate']);
    expect(planLifecycle({ ...s, deployed: true, active: false, appliedRev: 2 }, desired(3, true))).toEqual(['activate']);
  });
  it('resumes a half-done update after a failover with the remaining hook only', () => {
    // deactivate ran and was persisted; activate had not run.
    expect(planLifecycle({ ...s, deployed: true, active: false, appliedRev: 1 }, desired(2))).toEqual(['activate']);
  });
});
