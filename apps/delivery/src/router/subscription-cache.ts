import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { Subscription as NatsSubscription } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decryptValue, EmittedEvent, EncryptedValue } from '@app/contracts';
import { NatsService } from '@app/nats';
import { LOGGER } from '../common/tokens';
import { Reloads } from './reloads';

export interface RouteTarget {
  subscriptionId: string;
  listenerId: string;
}

export interface WebhookTarget {
  id: string;
  ownerId: string;
  url: string;
  /** Undefined when SECRETS_KEY cannot decrypt it. */
  secret: string | undefined;
  active: boolean;
}

interface SubRow {
  id: string;
  owner_id: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
}

/** The safety net's period at least (longer when a read takes over a twentieth of it: `Reloads.periodicDelayMs`). */
const REFRESH_MS = 30_000;
/** Rows sorted into the maps between two turns of the event loop. */
const YIELD_EVERY_ROWS = 5_000;

/**
 * A subscription routes while its listener exists and while its owner can still reach the owners of both
 * ends: the same account, or a user and an org they belong to (either way). Between two orgs (a route a
 * member of both made, owned by one of them) there is no membership of orgs in orgs to judge it: it routes
 * while the user who made it (`created_by`) belongs to both — otherwise an org's events would keep flowing,
 * after that member left it, through a subscription the org can neither see nor remove (it belongs to the
 * other org). Routes the platform made (`created_by` null: workflow triggers, auto-subscriptions) have an
 * emitter of their owner's. So a member removed from an org stops receiving the org's events through
 * subscriptions they made while a member, and the org's own subscriptions stop feeding that member's
 * personal listeners. A glob's emitters are its owner's.
 * The ends' owners come from left joins on primary keys (each end is at most one row of each table; the first
 * table that has it wins): as correlated subqueries, inlined into every branch that read them, the same load took
 * 13.9–18.0 s for 500,000 subscriptions on a scratch database against 3.7–4.5 s (same rows, same order).
 */
const MEMBER = (user: string, org: string): string => `exists (select 1 from org_members m where m.user_id = ${user} and m.org_id = ${org})`;
const REACHES = (owner: string, end: string, creator: string): string => `(${owner} = ${end}
  or (${owner} like 'o\\_%' and ${end} like 'o\\_%' and (${creator} is null or (${MEMBER(creator, owner)} and ${MEMBER(creator, end)})))
  or ${MEMBER(owner, end)} or ${MEMBER(end, owner)})`;
const ROUTABLE_SUBSCRIPTIONS = `with ends as (
  select s.id, s.owner_id, s.emitter_id, s.listener_id, s.event_name, s.created_by,
    case when s.emitter_id like '%*' then s.owner_id else coalesce(ex.owner_id, ep.owner_id) end as emitter_owner,
    coalesce(lx.owner_id, lw.owner_id, lp.owner_id) as listener_owner
  from subscriptions s
  left join sources ex on ex.id = s.emitter_id
  left join workflows ep on ep.id = s.emitter_id
  left join sources lx on lx.id = s.listener_id and lx.deleted_at is null
  left join webhooks lw on lw.id = s.listener_id and lw.active
  left join workflows lp on lp.id = s.listener_id and lp.deleted_at is null)
select id, owner_id, emitter_id, listener_id, event_name from ends
 where listener_owner is not null and ${REACHES('owner_id', 'listener_owner', 'created_by')}
   and (emitter_owner is null or ${REACHES('owner_id', 'emitter_owner', 'created_by')})
 order by id`;

/**
 * Subscriptions and webhooks in memory, read again when the api publishes
 * `changed.subscriptions` / `changed.webhooks` / `changed.sources` (routing waits for that read), and
 * every 30 s or more as a safety net (routing goes on meanwhile: `Reloads`).
 */
@Injectable()
export class SubscriptionCache implements OnApplicationBootstrap, OnApplicationShutdown {
  private exact = new Map<string, SubRow[]>();
  private globs = new Map<string, SubRow[]>();
  private webhooks = new Map<string, WebhookTarget>();
  private subs: NatsSubscription[] = [];
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly reloads = new Reloads(() => this.load());
  subscriptionCount = 0;

  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const onChange = (): void => void this.refresh().catch((e: Error) => this.logger.error({ err: e.message }, 'subscription refresh failed'));
    this.subs = [
      this.nats.nc.subscribe(this.nats.names.changed('subscriptions'), { callback: onChange }),
      this.nats.nc.subscribe(this.nats.names.changed('webhooks'), { callback: onChange }),
      this.nats.nc.subscribe(this.nats.names.changed('sources'), { callback: onChange }),
    ];
    await this.refresh();
    this.scheduleSafetyNet();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const s of this.subs) s.unsubscribe();
  }

  /** Reads everything again after a change; routing waits for it (`settled`). */
  refresh(): Promise<void> {
    return this.reloads.changed();
  }

  /** Resolves once every announced change has been read (a safety-net read in progress is not waited for). */
  settled(): Promise<void> {
    return this.reloads.current();
  }

  private scheduleSafetyNet(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.reloads
        .periodic()
        .catch((e: Error) => this.logger.error({ err: e.message }, 'subscription refresh failed'))
        .finally(() => this.scheduleSafetyNet());
    }, this.reloads.periodicDelayMs(REFRESH_MS));
  }

  private async load(): Promise<void> {
    const conn = this.em.fork().getConnection();
    const rows = (await conn.execute(ROUTABLE_SUBSCRIPTIONS)) as SubRow[];
    const hooks = (await conn.execute(`select id, owner_id, url, secret, active from webhooks`)) as { id: string; owner_id: string; url: string; secret: EncryptedValue; active: boolean }[];
    const exact = new Map<string, SubRow[]>();
    const globs = new Map<string, SubRow[]>();
    for (const [i, r] of rows.entries()) {
      // Hundreds of thousands of rows: the events waiting to be routed meanwhile go first, a slice at a time.
      if (i % YIELD_EVERY_ROWS === YIELD_EVERY_ROWS - 1) await new Promise((resolve) => setImmediate(resolve));
      const isGlob = r.emitter_id.endsWith('*');
      const key = isGlob ? `${r.owner_id}|${r.emitter_id.slice(0, -1)}` : r.emitter_id;
      const map = isGlob ? globs : exact;
      const list = map.get(key);
      if (list) list.push(r);
      else map.set(key, [r]);
    }
    const webhooks = new Map<string, WebhookTarget>();
    for (const h of hooks) webhooks.set(h.id, this.toTarget(h));
    this.exact = exact;
    this.globs = globs;
    this.webhooks = webhooks;
    this.subscriptionCount = rows.length;
  }

  /** A secret this SECRETS_KEY cannot decrypt leaves `secret` undefined: that webhook's attempts fail (and retry), nothing else stops. */
  private toTarget(h: { id: string; owner_id: string; url: string; secret: EncryptedValue; active: boolean }): WebhookTarget {
    let secret: string | undefined;
    try {
      secret = decryptValue<string>(this.config.secretsKey, h.secret);
    } catch {
      this.logger.error({ webhook_id: h.id }, 'the signing secret of this webhook cannot be decrypted with SECRETS_KEY (was the key changed?): its deliveries fail and are retried until the key is right');
    }
    return { id: h.id, ownerId: h.owner_id, url: h.url, active: h.active, secret };
  }

  /** One target per listener (the first matching subscription by id), so a listener never gets an event twice. */
  match(event: EmittedEvent): RouteTarget[] {
    const prefix = event.emitterId.startsWith('dc_') ? 'dc_' : event.emitterId.startsWith('p_') ? 'p_' : undefined;
    const candidates = [...(this.exact.get(event.emitterId) ?? []), ...(prefix ? (this.globs.get(`${event.ownerId}|${prefix}`) ?? []) : [])];
    const out = new Map<string, RouteTarget>();
    for (const s of candidates) {
      if (s.event_name !== (event.name ?? '') || s.listener_id === event.emitterId) continue;
      const prev = out.get(s.listener_id);
      if (!prev || s.id < prev.subscriptionId) out.set(s.listener_id, { subscriptionId: s.id, listenerId: s.listener_id });
    }
    return [...out.values()];
  }

  /** The owner of a webhook as last loaded (undefined for one created since): what the sender's per-account shares count by. */
  ownerOf(webhookId: string): string | undefined {
    return this.webhooks.get(webhookId)?.ownerId;
  }

  /** The webhook as last loaded; a miss (created since the last refresh) reads the database. */
  async webhook(id: string): Promise<WebhookTarget | undefined> {
    const hit = this.webhooks.get(id);
    if (hit) return hit;
    const [row] = (await this.em.fork().getConnection().execute(`select id, owner_id, url, secret, active from webhooks where id = ?`, [id])) as { id: string; owner_id: string; url: string; secret: EncryptedValue; active: boolean }[];
    if (!row) return undefined;
    const target = this.toTarget(row);
    this.webhooks.set(id, target);
    return target;
  }

  /** Marks a webhook inactive locally at once (the database row is updated by the caller). */
  disableLocally(id: string): void {
    const hit = this.webhooks.get(id);
    if (hit) hit.active = false;
  }
}
