import { Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { AccessChangeListener } from '../auth/access-change-listener';
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
export class ComponentsModule implements OnApplicationShutdown {
  constructor(@Inject(COMPONENT_READER) private readonly reader: ComponentReader, access: AccessChangeListener) {
    // The api's own sandbox processes (reading components, options()) restart on the same changes as the runners'.
    access.onChange((change) => change?.sandboxes.length && reader.restartSandboxes(change.sandboxes));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reader.close();
  }
}
