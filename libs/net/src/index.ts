export * from './address-policy';
export * from './outbound-guard';
export * from './safe-fetch';
export * from './guarded-agent';
export * from './resolve-host';
export * from './shown-url';
export * from './account-slots';
