import { AckPolicy, Consumer, ConsumerConfig, ConsumerMessages, DeliverPolicy, FetchOptions, JetStreamClient, JetStreamManager, JsMsg } from 'nats';
import { retryUnanswered } from './nats.service';

/** Creates or updates a durable pull consumer so restarts resume where the last replica stopped. */
export async function ensureDurable(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }): Promise<void> {
  const full: Partial<ConsumerConfig> = { ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ...config };
  await retryUnanswered(`creating consumer ${config.durable_name} on ${stream}`, async () => {
    try {
      await jsm.consumers.info(stream, config.durable_name);
      await jsm.consumers.update(stream, config.durable_name, {
        ack_wait: full.ack_wait,
        max_ack_pending: full.max_ack_pending,
        max_deliver: full.max_deliver,
        filter_subject: full.filter_subject,
      });
    } catch (e) {
      if (!/consumer not found/i.test((e as Error).message)) throw e;
      await jsm.consumers.add(stream, full);
    }
  });
}

/** A durable consumer to pull from, bound at start (JetStream may have no responder for a moment: retried). */
export function boundConsumer(js: JetStreamClient, stream: string, durable: string): Promise<Consumer> {
  return retryUnanswered(`binding consumer ${durable} on ${stream}`, () => js.consumers.get(stream, durable));
}

/**
 * One pull of up to `max_messages`, each handed to `onMessage` as it arrives, with a callback instead of the client's
 * async iterator, which yields every message through a down-levelled async generator: 2.5 times the client's CPU per
 * message and more of nats-server's (docs/benchmarks.md, "Consuming without the iterator"). Unlike `consume()`, which
 * with a callback sends its next pull requests as soon as messages arrive, however many are still waiting to be
 * handled, nothing more is asked for until the caller pulls again: the caller bounds what it holds. The pull ends when
 * all its messages came, when it expires (`expires` ms, at least 1,000; missed heartbeats end it sooner), or on
 * `stop()`: `closed()` resolves then, with the error that ended it if any. `onMessage` runs inside the client's read
 * loop and must not throw: a throw ends the pull with that error. A message can still arrive just after `stop()`:
 * callers check their own stopped state.
 */
export function pullEach(consumer: Consumer, opts: { max_messages: number; expires: number }, onMessage: (m: JsMsg) => void): Promise<ConsumerMessages> {
  // fetch() hands messages to a callback as consume() does, though its options' type leaves `callback` out.
  return consumer.fetch({ ...opts, callback: onMessage } as FetchOptions);
}
