import { AckPolicy, ConsumeMessages, Consumer, ConsumerConfig, ConsumerMessages, DeliverPolicy, JetStreamClient, JetStreamManager, JsMsg } from 'nats';
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
 * Consumes with a callback per message instead of the client's async iterator, which yields every message through a
 * down-levelled async generator: 2.5 times the client's CPU per message and more of nats-server's (docs/benchmarks.md,
 * "Consuming without the iterator"). For a consumer that takes every message as it comes: the client sends its next
 * pull requests at once, where the iterator sends them only as it is read (a loop that stops reading it stops the
 * flow; the webhook sender's bound relies on that). `onMessage` runs inside the client's read loop and must not
 * throw: a throw stops the consumer, as it ended a `for await` loop; `onStopped` hears the error that stopped it.
 * A message can still arrive just after `stop()`: callers check their own stopped state.
 */
export async function consumeEach(consumer: Consumer, opts: Pick<ConsumeMessages, 'max_messages'>, onMessage: (m: JsMsg) => void, onStopped: (err: Error) => void): Promise<ConsumerMessages> {
  const messages = await consumer.consume({ ...opts, callback: onMessage });
  void messages.closed().then((err) => {
    if (err) onStopped(err);
  });
  return messages;
}
