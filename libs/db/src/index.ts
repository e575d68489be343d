export * from './entities';
export * from './orm.config';
export * from './db.module';
export * from './with-orm';
export * from './db-errors';
export * from './access-changes';
export * from './event-summaries';
export * from './snapshot';
