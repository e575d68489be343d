import { ErrorCode, NatsConnection, NatsError, Status } from 'nats';
import { ConnectionState, isNatsUnavailable } from './nats-errors';

describe('isNatsUnavailable', () => {
  it('is true for a timeout, no responders, a closed connection and an unavailable JetStream', () => {
    expect(isNatsUnavailable(NatsError.errorForCode(ErrorCode.Timeout))).toBe(true);
    expect(isNatsUnavailable(NatsError.errorForCode(ErrorCode.NoResponders))).toBe(true);
    expect(isNatsUnavailable(NatsError.errorForCode(ErrorCode.ConnectionClosed))).toBe(true);
    const jsDown = NatsError.errorForCode(ErrorCode.JetStream409, new Error('JetStream system temporarily unavailable'));
    jsDown.api_error = { code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' };
    expect(isNatsUnavailable(jsDown)).toBe(true);
  });

  it('is false for errors about the request itself', () => {
    expect(isNatsUnavailable(NatsError.errorForCode(ErrorCode.MaxPayloadExceeded))).toBe(false);
    expect(isNatsUnavailable(NatsError.errorForCode(ErrorCode.PermissionsViolation))).toBe(false);
    expect(isNatsUnavailable(new Error('TIMEOUT'))).toBe(false);
  });
});

/** A connection whose status events the test sends. */
function fakeConnection(): { nc: NatsConnection; emit(type: string): Promise<void> } {
  const queue: Status[] = [];
  let wake: (() => void) | undefined;
  const nc = {
    status: () => ({
      async *[Symbol.asyncIterator]() {
        for (;;) {
          while (queue.length) yield queue.shift()!;
          await new Promise<void>((r) => (wake = r));
        }
      },
    }),
  } as unknown as NatsConnection;
  return {
    nc,
    emit: async (type) => {
      queue.push({ type, data: '' } as Status);
      wake?.();
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe('ConnectionState', () => {
  it('is down from a disconnect until the reconnection, and lets a caller wait a moment for it', async () => {
    const { nc, emit } = fakeConnection();
    const state = new ConnectionState(nc);
    expect(await state.whenConnected(0)).toBe(true);
    await emit('disconnect');
    expect(state.connected).toBe(false);
    expect(await state.whenConnected(10)).toBe(false);
    const waiting = state.whenConnected(5_000);
    await emit('reconnect');
    expect(await waiting).toBe(true);
    expect(state.connected).toBe(true);
  });
});
