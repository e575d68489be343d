import type { IsolationSettings } from '../isolation/setup';

/** Isolation settings for tests and benchmarks: the defaults the apps use, loopback closed, `overrides` on top. */
export function isolationSettings(dataDir: string, overrides: Partial<IsolationSettings> = {}): IsolationSettings {
  return {
    sandboxIsolation: 'namespaces',
    sandboxRunIn: 'process',
    sandboxThreadsPerAccount: 2,
    sandboxMemoryMb: 1024,
    sandboxMemoryTotalMb: 0,
    sandboxTmpMb: 64,
    sandboxNice: 10,
    sandboxIdleMs: 300_000,
    sandboxMaxProcesses: 64,
    sandboxUidBase: 200_000,
    sandboxEgressAllow: '',
    sandboxEgressDeny: '',
    sandboxEgressMaxConnections: 256,
    sandboxEgressBytesPerSecond: 8 * 1024 * 1024,
    sandboxEgressConnectsPerSecond: 100,
    sandboxEgressRefusedPerSecond: 10,
    sandboxEgressLookupsAtOnce: 8,
    allowLoopback: false,
    allowPrivateAddresses: false,
    natsUrl: 'nats://127.0.0.1:4222',
    apiMetricsPort: 0,
    runnerMetricsPort: 0,
    deliveryMetricsPort: 0,
    dataDir,
    ...overrides,
  };
}
