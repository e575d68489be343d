import { Inject, Module, OnApplicationShutdown, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { NatsService } from '@app/nats';
import { AccessChangeListener } from '../auth/access-change-listener';
import { onRetirement } from '../common/sandbox-retirement';
import { COMPONENT_READER, ComponentReader } from './component-reader';
import { ComponentGc } from './component-gc';
import { ComponentsController } from './components.controller';
import { ComponentsService } from './components.service';
import { RegistrySeeder } from './registry.seeder';
import { SandboxComponentReader } from './sandbox-component-reader';

@Module({
  controllers: [ComponentsController],
  providers: [
    ComponentsService,
    RegistrySeeder,
    ComponentGc,
    { provide: COMPONENT_READER, useFactory: (config: AppConfig) => SandboxComponentReader.create(config), inject: [APP_CONFIG] },
  ],
  exports: [ComponentsService, COMPONENT_READER, RegistrySeeder, ComponentGc],
})
export class ComponentsModule implements OnModuleInit, OnModuleDestroy, OnApplicationShutdown {
  private stopHearing: (() => void) | undefined;

  constructor(
    @Inject(COMPONENT_READER) private readonly reader: ComponentReader,
    access: AccessChangeListener,
    private readonly nats: NatsService,
  ) {
    // The api's own sandbox processes (reading components, options()) restart on the same changes as the runners'.
    access.onChange((change) => change?.sandboxes.length && reader.restartSandboxes(change.sandboxes));
  }

  /** ...and are retired on the same deletions: what a deleted source's code left running in them stops too. */
  onModuleInit(): void {
    this.stopHearing = onRetirement(this.nats, (accounts) => this.reader.retireSandboxes(accounts));
  }

  /** As the api starts shutting down (requests are refused 503 from then on), no read starts any more. */
  onModuleDestroy(): void {
    this.stopHearing?.();
    this.reader.refuseReads();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reader.close();
  }
}
