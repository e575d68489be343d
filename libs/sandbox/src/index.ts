export * from './types';
export { SandboxPool } from './pool';
export { defaultFetchText, bundleComponent, BundleError } from './bundler';
export { parseBareSpecifier, dependencyMap } from './specifiers';
export { normalizeTs, normalizeResponse, dbSizeBytes } from './worker/services';
