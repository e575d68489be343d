import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { JsMsg, Subscription } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decodeJson, DeleteEventsMessage, EmittedEvent, encodeJson } from '@app/contracts';
import { NatsService } from '@app/nats';
import { BatchConsumer, ensureDurable } from '../common/durable-consumer';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { channelClassOf } from './event-ids';
import { SummaryWriter } from './summary-writer';

const DURABLE = 'indexer';

/**
 * Indexes every emitted event (also `$errors` and `$logs`) into `event_summaries`,
 * keeping the last EVENT_RETENTION per emitter and channel class, and serves
 * `ctl.delete-events`. Messages are acked only after the rows are committed.
 */
@Injectable()
export class IndexerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private consumer?: BatchConsumer;
  private deleteSub?: Subscription;

  constructor(
    private readonly nats: NatsService,
    private readonly em: EntityManager,
    private readonly metrics: DeliveryMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const names = this.nats.names;
    await ensureDurable(this.nats.jsm, names.emitsStream, { durable_name: DURABLE, filter_subject: names.allEmits, max_ack_pending: 20_000, ack_wait: this.config.deliveryAckWaitMs * 1_000_000 });
    this.consumer = new BatchConsumer(this.nats.js, names.emitsStream, DURABLE, (batch) => this.index(batch), { maxBatch: 500, lingerMs: 5 }, this.logger, this.config.deliveryAckWaitMs);
    await this.consumer.start();
    this.deleteSub = this.nats.nc.subscribe(names.deleteEvents, { queue: 'delivery', callback: (err, msg) => {
      if (err) return;
      void this.deleteEvents(decodeJson<DeleteEventsMessage>(msg.data)).then(
        (deleted) => msg.respond(encodeJson({ ok: true, deleted })),
        (e: Error) => {
          this.logger.error({ err: e.message }, 'delete-events failed');
          msg.respond(encodeJson({ ok: false, error: e.message }));
        },
      );
    } });
  }

  async onApplicationShutdown(): Promise<void> {
    this.deleteSub?.unsubscribe();
    await this.consumer?.stop();
  }

  private async index(batch: JsMsg[]): Promise<void> {
    const events: EmittedEvent[] = [];
    const good: JsMsg[] = [];
    for (const m of batch) {
      try {
        events.push(decodeJson<EmittedEvent>(m.data));
        good.push(m);
      } catch {
        this.logger.warn({ subject: m.subject, seq: m.seq }, 'dropping an emit that is not JSON');
        m.term(); // not JSON
      }
    }
    const rejected = new Set(await new SummaryWriter(this.em.fork(), this.config.eventRetention).write(events));
    this.metrics.indexBatch.observe(events.length);
    events.forEach((e, i) => {
      if (rejected.has(e)) {
        this.logger.warn({ subject: good[i].subject, id: e?.id }, 'dropping an emit with a malformed id');
        good[i].term(); // malformed event id
        return;
      }
      this.metrics.eventsIndexed.inc({ channel_class: channelClassOf(e.name ?? '') });
      good[i].ack();
    });
  }

  async deleteEvents(req: DeleteEventsMessage): Promise<number> {
    const deleted = await new SummaryWriter(this.em.fork(), this.config.eventRetention).deleteRange(req.emitterId, req.startId, req.endId);
    this.metrics.deleteRequests.inc();
    this.logger.info({ source_id: req.emitterId, start_id: req.startId, end_id: req.endId, deleted }, 'events deleted');
    return deleted;
  }
}
