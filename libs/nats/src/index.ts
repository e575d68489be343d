export * from './nats.service';
export * from './nats.module';
export * from './stream-publisher';
export * from './write-coalescing';
export * from './object-gc';
export * from './nats-permissions';
export * from './durable-consumers';
export * from './nats-errors';
