import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { COMPONENT_READER, ComponentReader } from './component-reader';
import { registryDir, seedRegistry } from './registry';

/** Publishes the shipped registry (`registry/components`) when the api starts; already-published versions are skipped. */
@Injectable()
export class RegistrySeeder implements OnApplicationBootstrap {
  private readonly logger = new Logger('RegistrySeeder');

  constructor(
    private readonly em: EntityManager,
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const dir = registryDir(this.config);
    if (!dir) return;
    const results = await seedRegistry(this.em.fork(), this.reader, this.config, dir);
    for (const r of results) {
      if (r.error) this.logger.error(`registry component ${r.file} was not published: ${r.error}`);
      else if (r.created) this.logger.log(`registry component published key=${r.key}`);
    }
  }
}
