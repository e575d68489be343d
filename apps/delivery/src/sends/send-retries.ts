import { EntityManager } from '@mikro-orm/postgresql';
import { encodeJson, SendMessage } from '@app/contracts';
import type { Logger } from '@app/config';
import type { NatsService } from '@app/nats';
import { DuePoller, dueFairly, untilDue } from '../common/due-poller';
import { fromExactJson } from '../common/pg-text';
import { inTransaction } from '../common/transaction';

/** Due rows republished per poll (a poll that found some polls again at once). */
const POLL_BATCH = 500;

/** One poll's due sends, each account its share (`dueFairly`). */
const DUE_FAIRLY = dueFairly('send_retries', ['id', 'message'], POLL_BATCH);

/** A send's row: one per send of a run (`<invocationId>:s<index>`, its SENDS `Nats-Msg-Id`). */
const sendKey = (m: SendMessage): string => `${m.invocationId}:s${m.index}`;

/** The Nats-Msg-Id of a republished send: a republish after a crash is deduplicated by the stream. */
export const parkedMsgId = (m: SendMessage): string => `${sendKey(m)}:a${m.attempt ?? 1}:h${m.heldBack ?? 0}`;

/**
 * Workflow sends waiting in Postgres (`send_retries`): a failed attempt's next attempt, and sends held back while
 * their account has its share of the sender's slots. A send is written here and only then is its SENDS message
 * acked, so the consumer never holds waiting sends: a nak, even a delayed one, kept the message among the
 * consumer's max_ack_pending, and one account's failing or held sends filled it for every other account. A poller
 * republishes due rows into SENDS (row locks with `skip locked`: several delivery replicas share the work) and
 * deletes them once the stream stored them.
 */
export class SendRetries {
  private readonly poller = new DuePoller(() => this.poll(), (e) => this.logger.warn({ err: e.message }, 'republishing due workflow sends failed'));

  constructor(private readonly em: EntityManager, private readonly nats: NatsService, private readonly logger: Logger) {}

  /** Resolves once `message` (its `attempt` the attempt it will be) is committed, due at `dueAtMs`; a later attempt replaces an earlier one. */
  async park(message: SendMessage, dueAtMs: number): Promise<void> {
    await this.em.fork().getConnection().execute(
      `insert into send_retries (id, owner_id, attempt, due_at_ms, message, created_at_ms) values (?, ?, ?, ?, ?::json, ?)
       on conflict (id) do update set attempt = excluded.attempt, due_at_ms = excluded.due_at_ms, message = excluded.message
       where send_retries.attempt <= excluded.attempt`,
      [sendKey(message), message.ownerId, message.attempt ?? 1, dueAtMs, JSON.stringify(message), Date.now()],
      'run',
    );
  }

  start(): void {
    this.poller.start();
  }

  stop(): Promise<void> {
    return this.poller.stop();
  }

  /** Every replica's waiting sends (one table). */
  async waiting(): Promise<number> {
    const [row] = (await this.em.fork().getConnection().execute(`select count(*)::int as count from send_retries`, [])) as { count: number }[];
    return row?.count ?? 0;
  }

  /** Republishes one batch of due sends, each account its share (DUE_FAIRLY); returns the wait before the next poll. */
  private async poll(): Promise<number> {
    const found = await inTransaction(this.em, async (tx) => {
      const now = Date.now();
      const rows = (await tx.execute(DUE_FAIRLY, [now, now])) as { id: string; message: SendMessage }[];
      if (!rows.length) return false;
      await Promise.all(rows.map((r) => {
        const msg = fromExactJson<SendMessage>(r.message);
        return this.nats.streams.publish(this.nats.names.send(msg.workflowId), encodeJson(msg), parkedMsgId(msg));
      }));
      await tx.execute(`delete from send_retries where id in (${rows.map(() => '?').join(', ')})`, rows.map((r) => r.id), 'run');
      // An account may have more due than its share: the next poll takes them.
      return rows.length > 0;
    });
    return found ? 0 : untilDue(this.em, 'send_retries');
  }
}
