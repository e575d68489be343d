import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { Msg, Subscription as NatsSubscription } from 'nats';
import { APP_CONFIG, AppConfig, Logger } from '@app/config';
import { decryptValue, EmittedEvent, RoutesChanged } from '@app/contracts';
import { NatsService } from '@app/nats';
import { DeliveryMetrics } from '../common/metrics';
import { LOGGER } from '../common/tokens';
import { Reloads } from './reloads';
import { globOf, isGlobKey, LISTENER_ROUTES_SQL, routableSubscriptions, routeKey, routesOf, SubRow, TEXTS, WEBHOOK_COLUMNS, WebhookRow } from './route-queries';

export interface RouteTarget {
  subscriptionId: string;
  listenerId: string;
  listenerOwner: string;
}

export interface WebhookTarget {
  id: string;
  ownerId: string;
  url: string;
  /** Undefined when SECRETS_KEY cannot decrypt it. */
  secret: string | undefined;
  active: boolean;
}

/** The safety net's period at least (longer when a read takes over a twentieth of it: `Reloads.periodicDelayMs`). */
const REFRESH_MS = 30_000;
/** Rows sorted into the maps between two turns of the event loop. */
const YIELD_EVERY_ROWS = 5_000;

const listenerOn = (index: Map<string, Set<string>>, listenerId: string, key: string): void => {
  const keys = index.get(listenerId);
  if (keys) keys.add(key);
  else index.set(listenerId, new Set([key]));
};

/**
 * Subscriptions and webhooks in memory. A `changed.subscriptions` / `changed.webhooks` / `changed.sources`
 * announcement that names its routes (`RoutesChanged`) has those routes read again; one that names none has
 * everything read again (as at start). Routing waits for the reads of the changes announced before it
 * (`settled`), so a removed subscription stops routing at once, and never for changes announced later. Every
 * 30 s or more everything is read again as a safety net (routing goes on meanwhile: `Reloads`).
 *
 * Reads of some routes and reads of all of them may overlap: each read is numbered when it starts, and a map
 * entry is only replaced by a read that started after the one it came from. A full read takes seconds with
 * hundreds of thousands of subscriptions, so the routes read since it started are put back on top of it.
 */
@Injectable()
export class SubscriptionCache implements OnApplicationBootstrap, OnApplicationShutdown {
  private exact = new Map<string, SubRow[]>();
  private globs = new Map<string, SubRow[]>();
  private webhooks = new Map<string, WebhookTarget>();
  /** Listener → the routes it is on. */
  private byListener = new Map<string, Set<string>>();
  private subs: NatsSubscription[] = [];
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly reloads = new Reloads(() => this.load());
  /** Numbers the reads in the order they start. */
  private reads = 0;
  /** The number of the full read the maps were built from. */
  private fullRead = 0;
  /** Routes and webhooks read on their own since the full read in use (or one under way) started: key → the read's number and rows. */
  private readonly routesRead = new Map<string, { read: number; rows: SubRow[] }>();
  private readonly hooksRead = new Map<string, { read: number; hook: WebhookTarget | undefined }>();
  /**
   * Reads of the routes changes named, one at a time: the routes named while one runs are read together by the next
   * (`Reloads`), so a burst of changes (or an account making them in a loop) costs a read at a time, and routing
   * waits for two at most.
   */
  private readonly routeReloads = new Reloads(() => this.readNamedRoutes());
  /** Routes named since the last read of named routes started. */
  private named: Required<RoutesChanged> = { emitters: [], listeners: [] };
  subscriptionCount = 0;

  constructor(
    private readonly em: EntityManager,
    private readonly nats: NatsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly metrics: DeliveryMetrics,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const onChange = (_e: unknown, m: Msg): void => void this.changed(routesOf(m.data)).catch((e: Error) => this.logger.error({ err: e.message }, 'subscription refresh failed'));
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

  /**
   * A change was announced: reads the routes it names (everything when it names none); routing waits for it. A
   * read of some routes that fails is followed by a full read.
   */
  changed(routes: RoutesChanged | undefined): Promise<void> {
    if (!routes) return this.refresh();
    this.named.emitters.push(...(routes.emitters ?? []));
    this.named.listeners.push(...(routes.listeners ?? []));
    return this.routeReloads.changed();
  }

  /** Resolves once every change announced before the call has been read (a safety-net read in progress is not waited for). */
  async settled(): Promise<void> {
    await Promise.all([this.routeReloads.current(), this.reloads.current()]);
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
    const read = ++this.reads;
    this.metrics.routeReads.inc({ scope: 'all' });
    const conn = this.em.fork().getConnection();
    const rows = (await conn.execute(routableSubscriptions())) as SubRow[];
    const hooks = (await conn.execute(`select ${WEBHOOK_COLUMNS} from webhooks`)) as WebhookRow[];
    const exact = new Map<string, SubRow[]>();
    const globs = new Map<string, SubRow[]>();
    const byListener = new Map<string, Set<string>>();
    for (const [i, r] of rows.entries()) {
      // Hundreds of thousands of rows: the events waiting to be routed meanwhile go first, a slice at a time.
      if (i % YIELD_EVERY_ROWS === YIELD_EVERY_ROWS - 1) await new Promise((resolve) => setImmediate(resolve));
      const key = routeKey(r.emitter_id, r.owner_id);
      const map = isGlobKey(key) ? globs : exact;
      const list = map.get(key);
      if (list) list.push(r);
      else map.set(key, [r]);
      listenerOn(byListener, r.listener_id, key);
    }
    const webhooks = new Map<string, WebhookTarget>();
    for (const h of hooks) webhooks.set(h.id, this.toTarget(h));
    this.exact = exact;
    this.globs = globs;
    this.webhooks = webhooks;
    this.byListener = byListener;
    this.fullRead = read;
    this.subscriptionCount = rows.length;
    // What was read on its own after this read started is newer than what this read saw.
    for (const [key, r] of this.routesRead) {
      if (r.read > read) this.putRoute(key, r.rows);
      else this.routesRead.delete(key);
    }
    for (const [id, r] of this.hooksRead) {
      if (r.read > read) this.putWebhook(id, r.hook);
      else this.hooksRead.delete(id);
    }
  }

  /** Reads the routes named since the last such read; when that fails, every route. */
  private readNamedRoutes(): Promise<void> {
    const named = this.named;
    this.named = { emitters: [], listeners: [] };
    return this.readRoutes(named).catch((e: Error) => {
      this.logger.warn({ err: e.message }, 'reading the changed routes failed: reading every route');
      return this.refresh();
    });
  }

  /** Reads the named routes again: the emitters' subscriptions, and those of every route a named listener is on (before or after the change). */
  private async readRoutes(change: Required<RoutesChanged>): Promise<void> {
    const read = ++this.reads;
    this.metrics.routeReads.inc({ scope: 'changed' });
    const conn = this.em.fork().getConnection();
    const keys = new Set(change.emitters.map((e) => routeKey(e.emitter_id, e.owner_id)));
    const listeners = [...new Set(change.listeners)];
    let hooks: WebhookRow[] = [];
    if (listeners.length) {
      const ids = JSON.stringify(listeners);
      const on = (await conn.execute(`select distinct emitter_id, owner_id from subscriptions where listener_id = any(${TEXTS})`, [ids])) as { emitter_id: string; owner_id: string }[];
      for (const r of on) keys.add(routeKey(r.emitter_id, r.owner_id));
      for (const id of listeners) for (const key of this.byListener.get(id) ?? []) keys.add(key);
      hooks = (await conn.execute(`select ${WEBHOOK_COLUMNS} from webhooks where id = any(${TEXTS})`, [ids])) as WebhookRow[];
    }
    const exactIds = [...keys].filter((k) => !isGlobKey(k));
    const globOwners = [...keys].filter(isGlobKey).map((k) => k.slice(0, k.indexOf('|')));
    const rows = keys.size
      ? ((await conn.execute(routableSubscriptions(`s.emitter_id = any(${TEXTS}) or (s.owner_id = any(${TEXTS}) and s.emitter_id like '%*')`), [JSON.stringify(exactIds), JSON.stringify(globOwners)])) as SubRow[])
      : [];
    const byKey = new Map<string, SubRow[]>([...keys].map((k) => [k, []]));
    for (const r of rows) byKey.get(routeKey(r.emitter_id, r.owner_id))?.push(r);
    for (const [key, list] of byKey) {
      if ((this.routesRead.get(key)?.read ?? this.fullRead) > read) continue; // a later read has it
      this.routesRead.set(key, { read, rows: list });
      this.putRoute(key, list);
    }
    const found = new Map(hooks.map((h) => [h.id, h]));
    for (const id of listeners) {
      if ((this.hooksRead.get(id)?.read ?? this.fullRead) > read) continue;
      const row = found.get(id);
      const hook = row ? this.toTarget(row) : undefined; // none: deleted, or not a webhook
      this.hooksRead.set(id, { read, hook });
      this.putWebhook(id, hook);
    }
  }

  private putRoute(key: string, rows: SubRow[]): void {
    const map = isGlobKey(key) ? this.globs : this.exact;
    const before = map.get(key) ?? [];
    for (const r of before) {
      const keys = this.byListener.get(r.listener_id);
      keys?.delete(key);
      if (keys?.size === 0) this.byListener.delete(r.listener_id);
    }
    for (const r of rows) listenerOn(this.byListener, r.listener_id, key);
    if (rows.length) map.set(key, rows);
    else map.delete(key);
    this.subscriptionCount += rows.length - before.length;
  }

  private putWebhook(id: string, hook: WebhookTarget | undefined): void {
    if (hook) this.webhooks.set(id, hook);
    else this.webhooks.delete(id);
  }

  /**
   * A signing secret or url this SECRETS_KEY cannot decrypt leaves `secret` undefined: that webhook's attempts fail (and
   * retry), nothing else stops (the url as shown, its credentials masked, is never posted to).
   */
  private toTarget(h: WebhookRow): WebhookTarget {
    try {
      const url = h.url_sealed ? decryptValue<string>(this.config.secretsKey, h.url_sealed) : h.url;
      return { id: h.id, ownerId: h.owner_id, url, active: h.active, secret: decryptValue<string>(this.config.secretsKey, h.secret) };
    } catch {
      this.logger.error({ webhook_id: h.id }, 'the signing secret or url of this webhook cannot be decrypted with SECRETS_KEY (was the key changed?): its deliveries fail and are retried until the key is right');
      return { id: h.id, ownerId: h.owner_id, url: h.url, active: h.active, secret: undefined };
    }
  }

  /** One target per listener (the first matching subscription by id), so a listener never gets an event twice. */
  match(event: EmittedEvent): RouteTarget[] {
    const glob = globOf(event.emitterId);
    const candidates = [...(this.exact.get(event.emitterId) ?? []), ...(glob ? (this.globs.get(routeKey(glob, event.ownerId)) ?? []) : [])];
    const out = new Map<string, RouteTarget>();
    for (const s of candidates) {
      if (s.event_name !== (event.name ?? '') || s.listener_id === event.emitterId) continue;
      const prev = out.get(s.listener_id);
      if (!prev || s.id < prev.subscriptionId) out.set(s.listener_id, { subscriptionId: s.id, listenerId: s.listener_id, listenerOwner: s.listener_owner });
    }
    return [...out.values()];
  }

  /**
   * Whether the event still routes to the listener (through any subscription: one event per listener), asked before
   * a queued webhook delivery or retry is attempted. Waits for the changes announced so far (`settled`); a route this
   * copy lacks is looked for in Postgres before the answer is no, since a route made a moment ago (announced to this
   * replica late, or the announcement lost) must not drop a delivery for good.
   */
  async routes(event: EmittedEvent, listenerId: string): Promise<boolean> {
    await this.settled();
    if (this.match(event).some((t) => t.listenerId === listenerId)) return true;
    if (listenerId === event.emitterId) return false;
    const params = [listenerId, event.name ?? '', event.emitterId, globOf(event.emitterId) ?? null, event.ownerId];
    return ((await this.em.fork().getConnection().execute(LISTENER_ROUTES_SQL, params)) as SubRow[]).length > 0;
  }

  /** The owner of a webhook as last loaded (undefined for one created since): what the sender's per-account shares count by. */
  ownerOf(webhookId: string): string | undefined {
    return this.webhooks.get(webhookId)?.ownerId;
  }

  /** The webhook as last loaded; a miss (created since the last refresh) reads the database. */
  async webhook(id: string): Promise<WebhookTarget | undefined> {
    const hit = this.webhooks.get(id);
    if (hit) return hit;
    const [row] = (await this.em.fork().getConnection().execute(`select ${WEBHOOK_COLUMNS} from webhooks where id = ?`, [id])) as WebhookRow[];
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
