import { EventEmitter } from 'node:events';
import { SseService } from './sse.service';

/** The parts of a response an event stream writes to. */
function response() {
  return Object.assign(new EventEmitter(), {
    ended: false,
    writes: [] as string[],
    write(text: string) {
      this.writes.push(text);
      return true;
    },
    end() {
      this.ended = true;
    },
  });
}

describe('SseService.hold: an event stream checks its access once held', () => {
  // A keep-alive far away: what is checked here is checked without one.
  const service = () => new SseService({} as never, { sseKeepaliveMs: 3_600_000, sseMaxStreamsPerKey: 64 } as never, { onChange: () => () => undefined } as never);

  it('ends a stream whose access changed while it was opening (a key rotated, a membership ended): before, it streamed until the next keep-alive', async () => {
    // The request was authenticated, then the stream's NATS consumer was made; an access change announced
    // in between found no stream to check. Held now, it is checked at once, and writes nothing before the answer.
    const res = response();
    let released = 0;
    let stopped = 0;
    const held = service().hold(res as never, 'dc_x', async () => false, () => released++, () => stopped++);
    const gate = held.gate();
    expect(gate).toBeDefined();
    expect(await gate).toBe(false);
    expect([held.closed(), res.ended, released, stopped]).toEqual([true, true, 1, 1]);
  });

  it('keeps a stream whose access holds', async () => {
    const res = response();
    const held = service().hold(res as never, 'dc_x', async () => true, () => undefined, () => undefined);
    expect(await held.gate()).toBe(true);
    expect([held.closed(), res.ended, held.gate()]).toEqual([false, false, undefined]);
    held.close();
    expect(res.ended).toBe(true);
  });
});
