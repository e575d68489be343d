export * from './descriptor';
export * from './prop-types';
export * from './analyze-component';
export * from './configured-props';
export * from './timer-event';
export * from './workflow-definition';
export * from './additional-props';
export * from './form-limits';
