import { DynamicModule, Global, Injectable, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { NatsService } from './nats.service';

export const NATS_CLIENT_NAME = Symbol('NATS_CLIENT_NAME');

@Injectable()
class NatsLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(private readonly nats: NatsService) {}
  async onModuleInit(): Promise<void> {
    await this.nats.start();
  }
  async onApplicationShutdown(): Promise<void> {
    await this.nats.stop();
  }
}

/** Provides a started `NatsService`; drains the connection on shutdown. */
@Global()
@Module({})
export class NatsModule {
  /** `manageStreams`: whether this app creates and updates streams and buckets (the api) or waits for them. */
  static forRoot(clientName: string, { manageStreams }: { manageStreams: boolean }): DynamicModule {
    return {
      module: NatsModule,
      providers: [
        { provide: NatsService, useFactory: (config: AppConfig) => new NatsService(config, clientName, { manageStreams }), inject: [APP_CONFIG] },
        NatsLifecycle,
      ],
      exports: [NatsService],
    };
  }
}

