import type { InvocationMessage } from '@app/contracts';
import { invocationsOf, MessageInvocations, MessageOutcome, RanBefore } from './message-invocations';

const inv = (id: string, sourceId = 'dc_a'): InvocationMessage => ({ invocationId: id, sourceId, kind: 'http', event: {}, createdAtMs: 0 });

describe('MessageInvocations', () => {
  const track = (n: number) => {
    const outcomes: MessageOutcome[] = [];
    const settled = new MessageInvocations(Array.from({ length: n }, (_, i) => inv(`inv_${i}`)), (o) => outcomes.push(o));
    return { settled, outcomes };
  };

  it('acknowledges the message once, when every invocation in it is acknowledged', () => {
    const { settled, outcomes } = track(3);
    settled.ack(2);
    settled.ack(0);
    expect(outcomes).toEqual([]);
    settled.ack(0); // settled twice: counted once
    expect(outcomes).toEqual([]);
    settled.ack(1);
    expect(outcomes).toEqual([{ ack: true }]);
  });

  it('hands the message back once all are settled and one was handed back, naming those that finished, with the longest delay asked', () => {
    const { settled, outcomes } = track(4);
    settled.ack(0);
    settled.nak(1, 1000);
    settled.ack(2);
    expect(outcomes).toEqual([]);
    settled.nak(3, 500);
    expect(outcomes).toEqual([{ nakDelayMs: 1000, finished: ['inv_0', 'inv_2'] }]);
  });

  it('hands back without a delay when none was asked', () => {
    const { settled, outcomes } = track(1);
    settled.nak(0);
    expect(outcomes).toEqual([{ nakDelayMs: undefined, finished: [] }]);
  });
});

describe('invocationsOf', () => {
  it('reads a plain invocation or a list of one source\'s invocations, nothing else', () => {
    expect(invocationsOf(inv('inv_1'))).toEqual([inv('inv_1')]);
    expect(invocationsOf([inv('inv_1'), inv('inv_2')])).toEqual([inv('inv_1'), inv('inv_2')]);
    expect(invocationsOf([inv('inv_1'), inv('inv_2', 'dc_b')])).toBeUndefined();
    expect(invocationsOf([])).toBeUndefined();
    expect(invocationsOf([inv('inv_1'), null])).toBeUndefined();
    expect(invocationsOf({ sourceId: 'dc_a' })).toBeUndefined();
    expect(invocationsOf('x')).toBeUndefined();
    expect(invocationsOf(null)).toBeUndefined();
  });
});

describe('RanBefore', () => {
  it('tells once that an invocation ran here, within its time to live', () => {
    let now = 1_000;
    const ran = new RanBefore(60_000, () => now);
    ran.add(['inv_1', 'inv_2']);
    expect(ran.take('inv_1')).toBe(true);
    expect(ran.take('inv_1')).toBe(false);
    expect(ran.take('inv_3')).toBe(false);
    now += 60_001;
    expect(ran.take('inv_2')).toBe(false);
  });
});
