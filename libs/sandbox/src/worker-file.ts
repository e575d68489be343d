import { createHash } from 'node:crypto';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';

/**
 * The Piscina worker script. From the build (dist) it is `worker.js` beside
 * this file; when running from TypeScript sources (jest, ts-node) the worker
 * is compiled once with esbuild into the temp dir, keyed by its content.
 */
export function resolveWorkerFile(): string {
  const js = join(__dirname, 'worker.js');
  if (existsSync(js)) return js;
  const ts = join(__dirname, 'worker.ts');
  const out = buildSync({
    entryPoints: [ts],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['esbuild', 'piscina'],
    logLevel: 'silent',
  });
  const text = out.outputFiles[0].text;
  const file = join(tmpdir(), `ess-sandbox-worker-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.js`);
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  }
  return file;
}
