import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { COMPONENT_READER, ComponentReader } from './component-reader';
import { registryDir, seedRegistry } from './registry';

/** `off`: no shipped registry; `seeding`: publishing in the background; `ready`: done (bad files are logged); `failed`: the seed itself failed. */
export type RegistryStatus = 'off' | 'seeding' | 'ready' | 'failed';

/**
 * Publishes the shipped registry (`registry/components`) in the background once the api
 * is up: listening is not held back by reading every component (which may install npm
 * packages). Already-published versions are skipped; replicas take turns through a
 * Postgres advisory lock. `GET /v1/components/registry/{key}` waits for the seed before
 * answering 404, and `/healthz` reports the status.
 */
@Injectable()
export class RegistrySeeder implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('RegistrySeeder');
  status: RegistryStatus = 'off';
  private seeding?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly em: EntityManager,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    const dir = registryDir(this.config);
    if (!dir) return;
    this.status = 'seeding';
    // Started on the next turn of the event loop, after the api has started listening.
    this.seeding = new Promise<void>((r) => setImmediate(r))
      .then(() => seedRegistry(this.em.fork(), this.reader, this.config, dir, () => this.stopped))
      .then((results) => {
        for (const r of results) {
          if (r.error) this.logger.error(`registry component ${r.file} was not published: ${r.error}`);
          else if (r.created) this.logger.log(`registry component published key=${r.key}`);
        }
        this.status = 'ready';
        this.logger.log(`registry seeded components=${results.filter((r) => !r.error).length}`);
      })
      .catch((e: Error) => {
        this.status = 'failed';
        if (!this.stopped) this.logger.error(`registry seeding failed: ${e.message}`);
      });
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.settled(10_000);
  }

  /** Resolves when seeding is over (at once when it is not running), or after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<void> {
    if (this.status !== 'seeding' || !this.seeding) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.seeding, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }
}
