import type { EmittedEvent } from '@app/contracts';
import type { EmitUnit } from './actor-deps';
import { addEmits } from './source-execution';

describe('addEmits', () => {
  it("adds a run's loose events after the last loose unit's, however many (EMITS_PER_INVOCATION may allow 200,000)", () => {
    const events = (n: number, run: string): EmittedEvent[] => Array.from({ length: n }, (_, i) => ({ id: `1-${i}`, emitterId: 'dc_1', ownerId: 'u_1', name: '', event: { run }, emitId: `${run}${i}`, ts: 1, emittedAtMs: 1 }));
    const units: EmitUnit[] = [];
    addEmits(units, undefined, 'a', events(1, 'a'));
    addEmits(units, undefined, 'b', events(200_000, 'b'));
    expect(units).toHaveLength(1);
    const loose = (units[0] as { events: EmittedEvent[] }).events;
    expect(loose).toHaveLength(200_001);
    expect([loose[0].emitId, loose[200_000].emitId]).toEqual(['a0', 'b199999']);
  });
});
