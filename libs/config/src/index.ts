export * from './config';
export * from './config.module';
export * from './logger';
export * from './ops-server';
export * from './address-rule';
export * from './trust-proxy';
