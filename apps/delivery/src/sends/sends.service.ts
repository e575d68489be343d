import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { ConsumerMessages, JsMsg } from 'nats';
import { Counter, Registry } from 'prom-client';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decodeJson, SendMessage } from '@app/contracts';
import { boundConsumer, ensureDurable, NatsService } from '@app/nats';
import { LOGGER } from '../common/tokens';
import { SendFailure, SendPerformers } from './send-performers';

const DURABLE = 'sends';
const CONCURRENCY = 32;

/**
 * Performs workflow sends (`$.send.http|email|s3`) from stream SENDS, which the
 * runner fills only after a run succeeded. A failed attempt is retried on
 * WEBHOOK_RETRY_SCHEDULE by a delayed nak (JetStream keeps the message, so a
 * crash loses nothing); a permanent failure or the last attempt ends it, logged
 * with the workflow and invocation ids.
 */
@Injectable()
export class SendsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private messages?: ConsumerMessages;
  private readonly performers: SendPerformers;
  private readonly attempts: Counter<'kind' | 'outcome'>;
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly nats: NatsService,
    em: EntityManager,
    registry: Registry,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.performers = new SendPerformers(config, em);
    this.attempts = new Counter({ name: 'delivery_send_attempts_total', help: 'workflow send attempts ($.send.http, email, s3) by kind and outcome (ok, retry, failed)', labelNames: ['kind', 'outcome'], registers: [registry] });
  }

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.sendsStream, { durable_name: DURABLE, filter_subject: names.allSends, max_ack_pending: 1000, max_deliver: -1, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    const consumer = await boundConsumer(this.nats.js, names.sendsStream, DURABLE);
    this.messages = await consumer.consume({ max_messages: CONCURRENCY });
    void this.consume(this.messages);
  }

  async onApplicationShutdown(): Promise<void> {
    this.messages?.stop();
    await Promise.allSettled([...this.inflight]);
  }

  private async consume(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const m of messages) {
        while (this.inflight.size >= CONCURRENCY) await Promise.race(this.inflight);
        const p = this.handle(m).finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      }
    } catch (e) {
      this.logger.error({ err: (e as Error).message }, 'sends consumer stopped');
    }
  }

  private async handle(m: JsMsg): Promise<void> {
    let msg: SendMessage;
    try {
      msg = decodeJson<SendMessage>(m.data);
    } catch {
      m.term();
      return;
    }
    const attempt = m.info.deliveryCount;
    const ids = { workflow_id: msg.workflowId, invocation_id: msg.invocationId, kind: msg.kind, attempt };
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
        m.nak(delays[attempt - 1]);
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
