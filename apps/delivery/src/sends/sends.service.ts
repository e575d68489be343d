import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { ConsumerMessages, JsMsg } from 'nats';
import { Counter, Gauge, Registry } from 'prom-client';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decodeJson, SendMessage } from '@app/contracts';
import { boundConsumer, ensureDurable, NatsService } from '@app/nats';
import { LOGGER } from '../common/tokens';
import { SendFailure, SendPerformers } from './send-performers';
import { SendRetries } from './send-retries';
import { OwnerLanes } from './owner-lanes';

const DURABLE = 'sends';
/** Sends performed at once by a replica (SENDS_IN_FLIGHT_PER_ACCOUNT of them at most of one account). */
const CONCURRENCY = 32;
/** Sends of one account a replica holds waiting for its turn; past it they are held back (below). */
const WAITING_PER_ACCOUNT = 256;
/** Sends a replica holds waiting, all accounts together: the consumer's max_ack_pending is well above it. */
const WAITING_MAX = 2048;
const MAX_ACK_PENDING = 4096;
/** A send held back (its account had its share of the slots) is due again in this long (±50 %). */
const HELD_BACK_DELAY_MS = 10_000;

/**
 * Performs workflow sends (`$.send.http|email|s3`) from stream SENDS, which the
 * runner fills only after a run succeeded. A failed attempt's next one waits in
 * Postgres (`send_retries`, WEBHOOK_RETRY_SCHEDULE) and is republished when due;
 * a permanent failure or the last attempt ends it, logged with the workflow and
 * invocation ids. An account performs SENDS_IN_FLIGHT_PER_ACCOUNT sends at once,
 * accounts taking turns for the free slots (OwnerLanes); the ones an account has
 * no room for are held back in Postgres, not waited for, so the consumer always
 * goes on to other accounts' sends. Every message is acked only once its outcome
 * (done, or the next attempt stored) is durable: a crash loses nothing.
 */
@Injectable()
export class SendsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private messages?: ConsumerMessages;
  private readonly performers: SendPerformers;
  private readonly attempts: Counter<'kind' | 'outcome'>;
  private readonly lanes: OwnerLanes<{ m: JsMsg; msg: SendMessage }>;
  private readonly retries: SendRetries;
  /** Keeps the messages waiting for their account's turn from being redelivered meanwhile. */
  private keepAlive?: NodeJS.Timeout;

  constructor(
    private readonly nats: NatsService,
    private readonly em: EntityManager,
    registry: Registry,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.performers = new SendPerformers(config, em);
    this.retries = new SendRetries(em, nats, logger);
    this.lanes = new OwnerLanes(
      { concurrency: CONCURRENCY, perOwner: config.sendsInFlightPerAccount, waitingPerOwner: WAITING_PER_ACCOUNT, waitingMax: WAITING_MAX },
      ({ m, msg }) => this.handle(m, msg),
    );
    this.attempts = new Counter({ name: 'delivery_send_attempts_total', help: 'workflow send attempts ($.send.http, email, s3) by kind and outcome (ok, retry, failed; dropped: its workflow was deleted; held_back: not attempted yet, its account had no room on this replica: SENDS_IN_FLIGHT_PER_ACCOUNT in flight and 256 waiting)', labelNames: ['kind', 'outcome'], registers: [registry] });
    const retries = this.retries;
    new Gauge({
      name: 'delivery_sends_waiting',
      help: 'workflow sends waiting in Postgres for their next attempt or their turn (every replica)',
      registers: [registry],
      async collect() {
        this.set(await retries.waiting().catch(() => 0));
      },
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.sendsStream, { durable_name: DURABLE, filter_subject: names.allSends, max_ack_pending: MAX_ACK_PENDING, max_deliver: -1, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    const consumer = await boundConsumer(this.nats.js, names.sendsStream, DURABLE);
    this.messages = await consumer.consume({ max_messages: CONCURRENCY });
    this.retries.start();
    this.keepAlive = setInterval(() => this.lanes.forEachWaiting(({ m }) => m.working()), Math.max(500, this.config.deliveryAckWaitMs / 3));
    void this.consume(this.messages);
  }

  async onApplicationShutdown(): Promise<void> {
    this.messages?.stop();
    clearInterval(this.keepAlive);
    for (const { m } of this.lanes.drain()) m.nak();
    const deadline = Date.now() + 5_000;
    while (this.lanes.running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await this.retries.stop();
  }

  private async consume(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const m of messages) {
        let msg: SendMessage;
        try {
          msg = decodeJson<SendMessage>(m.data);
        } catch {
          m.term();
          continue;
        }
        if (!this.lanes.offer(msg.ownerId, { m, msg })) this.holdBack(m, msg);
      }
    } catch (e) {
      this.logger.error({ err: (e as Error).message }, 'sends consumer stopped');
    }
  }

  /** Parks a send its account has no room for now, as the same attempt, then acks it; if parking fails, naks it. */
  private holdBack(m: JsMsg, msg: SendMessage): void {
    this.attempts.inc({ kind: msg.kind, outcome: 'held_back' });
    const held = { ...msg, attempt: this.attemptOf(m, msg), heldBack: (msg.heldBack ?? 0) + 1 };
    this.retries.park(held, Date.now() + Math.round(HELD_BACK_DELAY_MS * (0.5 + Math.random()))).then(
      () => m.ack(),
      (e: Error) => {
        this.logger.warn({ err: e.message, workflow_id: msg.workflowId }, 'holding back a workflow send failed; it comes again');
        m.nak(HELD_BACK_DELAY_MS);
      },
    );
  }

  /** The attempt a message is: the one it carries, plus its redeliveries (a replica died during an attempt). */
  private attemptOf(m: JsMsg, msg: SendMessage): number {
    return (msg.attempt ?? 1) + m.info.deliveryCount - 1;
  }

  /**
   * Whether the send's workflow is still there: a deleted workflow's sends are dropped (the api purges those in
   * SENDS and in send_retries when it deletes it; this catches the ones a replica already held). When Postgres
   * cannot tell, the send goes ahead.
   */
  private async workflowLive(workflowId: string): Promise<boolean> {
    const rows = await this.em.fork().getConnection().execute(`select 1 from workflows where id = ? and deleted_at is null`, [workflowId]).catch(() => [{}]);
    return rows.length > 0;
  }

  private async handle(m: JsMsg, msg: SendMessage): Promise<void> {
    const attempt = this.attemptOf(m, msg);
    const ids = { workflow_id: msg.workflowId, invocation_id: msg.invocationId, kind: msg.kind, attempt };
    if (!(await this.workflowLive(msg.workflowId))) {
      m.term();
      this.attempts.inc({ kind: msg.kind, outcome: 'dropped' });
      this.logger.info(ids, 'workflow deleted: its send is dropped');
      return;
    }
    const keepAlive = setInterval(() => m.working(), Math.max(500, this.config.deliveryAckWaitMs / 3));
    try {
      const what = await this.performers.perform(msg);
      m.ack();
      this.attempts.inc({ kind: msg.kind, outcome: 'ok' });
      this.logger.debug({ ...ids, result: what }, 'workflow send done');
    } catch (e) {
      const delays = this.config.webhookRetryDelaysMs;
      const permanent = e instanceof SendFailure && e.permanent;
      if (!permanent && attempt <= delays.length) {
        await this.retries.park({ ...msg, attempt: attempt + 1 }, Date.now() + delays[attempt - 1]).then(
          () => m.ack(),
          (pe: Error) => {
            this.logger.warn({ ...ids, err: pe.message }, 'storing a workflow send\'s retry failed; it comes again');
            m.nak(delays[attempt - 1]);
          },
        );
        this.attempts.inc({ kind: msg.kind, outcome: 'retry' });
        this.logger.info({ ...ids, err: (e as Error).message, retry_in_ms: delays[attempt - 1] }, 'workflow send failed; retrying');
      } else {
        m.term();
        this.attempts.inc({ kind: msg.kind, outcome: 'failed' });
        this.logger.error({ ...ids, err: (e as Error).message, permanent }, 'workflow send failed for good');
      }
    } finally {
      clearInterval(keepAlive);
    }
  }
}
