import { DynamicModule, Global, Injectable, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, AppConfig, createLogger } from '@app/config';
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

/**
 * An app whose NATS connection is gone for good (the server refused its credentials
 * twice, e.g. after a password rotation and a reload) stops, gracefully, instead of
 * staying up without NATS: its supervisor (docker compose, systemd, npm start)
 * restarts it with the current credentials, or shows that it cannot.
 */
function stopOnLostConnection(config: AppConfig, app: string, err: Error): void {
  createLogger(app, config.logLevel).fatal({ err: err.message, code: (err as { code?: string }).code }, 'the NATS connection is closed for good (wrong or rotated credentials?): stopping');
  process.kill(process.pid, 'SIGTERM');
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
        { provide: NatsService, useFactory: (config: AppConfig) => new NatsService(config, clientName, { manageStreams, onConnectionLost: (err) => stopOnLostConnection(config, clientName, err) }), inject: [APP_CONFIG] },
        NatsLifecycle,
      ],
      exports: [NatsService],
    };
  }
}

