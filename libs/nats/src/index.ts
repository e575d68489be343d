export * from './nats.service';
export * from './nats.module';
