import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import { APP_CONFIG, AppConfig } from '@app/config';
import { encodeJson, RestartSandboxes } from '@app/contracts';
import { AccessChange, ACCESS_CHANGED_CHANNEL, parseAccessChange } from '@app/db';
import { NatsService } from '@app/nats';

const RECONNECT_MIN_MS = 1000;
const RECONNECT_MAX_MS = 30_000;

/**
 * Listens on Postgres for access changes (`notifyAccessChanged`: a key rotated, a membership added or
 * removed, a plan changed, by this replica, another one or the admin CLI) and passes each on: the
 * delivery apps reload their subscriptions (`changed.subscriptions`), so an ex-member's webhooks and
 * sources stop receiving the org's events at once; the runners restart the sandbox processes the change
 * names (`ctl.restart-sandboxes`); and the handlers registered here run (open event streams check their
 * access, the api's own sandbox processes restart). A lost connection is made again, and counts as a
 * change (streams check access, subscriptions reload: one may have been missed meanwhile); it restarts no
 * sandbox process — every account's after each Postgres blip would cost every account's runs a cold start.
 */
@Injectable()
export class AccessChangeListener implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('AccessChangeListener');
  private readonly handlers = new Set<(change: AccessChange | undefined) => void>();
  private client: Client | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = RECONNECT_MIN_MS;
  private stopped = false;

  constructor(
    private readonly nats: NatsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Runs `handler` on every access change (`undefined`: one may have been missed while the connection was down); returns its removal. */
  onChange(handler: (change: AccessChange | undefined) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async onModuleInit(): Promise<void> {
    await this.connect(false);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await this.client?.end().catch(() => undefined);
  }

  private async connect(missedAny: boolean): Promise<void> {
    if (this.stopped || !this.config.databaseUrl) return;
    const client = new Client({ connectionString: this.config.databaseUrl, application_name: 'ess-api-access-changes' });
    client.on('notification', (n) => this.changed(parseAccessChange(n.payload)));
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${ACCESS_CHANGED_CHANNEL}`);
    } catch (e) {
      this.lost(client, e as Error);
      return;
    }
    this.client = client;
    this.retryMs = RECONNECT_MIN_MS;
    if (missedAny) this.changed(undefined);
  }

  private lost(client: Client, e?: Error): void {
    if (this.stopped || (this.client && this.client !== client)) return;
    this.client = undefined;
    void client.end().catch(() => undefined);
    if (this.retryTimer) return;
    this.logger.warn(`listening for access changes stopped${e ? `: ${e.message}` : ''}; trying again in ${this.retryMs / 1000} s (open event streams still check access at every keep-alive)`);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect(true);
    }, this.retryMs);
    this.retryMs = Math.min(RECONNECT_MAX_MS, this.retryMs * 2);
  }

  private changed(change: AccessChange | undefined): void {
    try {
      this.nats.nc.publish(this.nats.names.changed('subscriptions'));
      if (change?.sandboxes.length) {
        const restart: RestartSandboxes = { id: change.id, accounts: change.sandboxes };
        this.nats.nc.publish(this.nats.names.restartSandboxes, encodeJson(restart));
      }
    } catch (e) {
      this.logger.warn(`could not tell the delivery apps and runners of an access change: ${(e as Error).message}`);
    }
    for (const handler of this.handlers) handler(change);
  }
}
