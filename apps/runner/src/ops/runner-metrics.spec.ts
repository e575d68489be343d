import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { RunnerMetrics } from './runner-metrics';

/** The runner's metrics table in docs/operations.md, as an operator reads it. */
function documentedRunnerMetrics(): string {
  const doc = readFileSync(join(__dirname, '../../../../docs/operations.md'), 'utf8');
  const start = doc.indexOf('## Metrics (`GET /metrics` on `RUNNER_METRICS_PORT`)');
  return doc.slice(start, doc.indexOf('\n## ', start + 1));
}

describe('RunnerMetrics', () => {
  it('documents every metric it exports in docs/operations.md', async () => {
    const registry = new Registry();
    new RunnerMetrics(registry);
    const table = documentedRunnerMetrics();
    const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names.filter((name) => !table.includes(`\`${name}`))).toEqual([]);
  });

  it('names in the help of runner_invocations_total the outcomes and kinds the docs list', async () => {
    const registry = new Registry();
    new RunnerMetrics(registry);
    const help = (await registry.getMetricsAsJSON()).find((m) => m.name === 'runner_invocations_total')!.help;
    const row = documentedRunnerMetrics().split('\n').find((l) => l.startsWith('| `runner_invocations_total'))!;
    for (const word of ['ok', 'error', 'inactive', 'duplicate', 'unknown_source', 'chain_refused', 'http', 'timer', 'manual', 'subscription', 'apphook']) {
      expect(`${word}: ${help.includes(word)}`).toBe(`${word}: true`);
      expect(`${word}: ${row.includes(`\`${word}\``)}`).toBe(`${word}: true`);
    }
    expect(help).not.toMatch(/skipped|stale/);
  });
});
