export * from './types';
export { SandboxPool } from './pool';
export { defaultFetchText, bundleComponent, BundleError } from './bundler';
export { buildSurvivingCompilerDeath } from './esbuild-service';
export { parseBareSpecifier, dependencyMap } from './specifiers';
export { normalizeTs, normalizeResponse, dbSizeBytes } from './worker/services';
export { setUpIsolation, IsolationUnavailableError, type Isolation, type IsolationSettings } from './isolation/setup';
export type { SandboxIsolationOptions } from './isolation/isolated-runner';
export { createSandboxPool } from './isolation/create-pool';
