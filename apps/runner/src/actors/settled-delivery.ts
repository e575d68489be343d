import type { InvocationDelivery } from './actor-deps';

/** An invocation that remembers whether it was acked or naked (once only). */
export type SettledDelivery = InvocationDelivery & { readonly settled: boolean };

export function settleOnce(d: InvocationDelivery): SettledDelivery {
  let settled = false;
  return {
    msg: d.msg,
    redelivered: d.redelivered,
    group: d.group,
    get settled() {
      return settled;
    },
    ack: () => {
      if (!settled) d.ack();
      settled = true;
    },
    nak: (delayMs?: number) => {
      if (!settled) d.nak(delayMs);
      settled = true;
    },
  };
}
