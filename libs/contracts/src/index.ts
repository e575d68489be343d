export * from './ids';
export * from './partition';
export * from './subjects';
export * from './messages';
export * from './secrets';
export * from './errors';
export * from './http-event';
export * from './workflow-state';
