import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultFetchText } from '../bundler';
import { ComponentPreparer } from '../preparer';
import { resolveHostFile, resolveWorkerFile } from '../worker-file';
import { encodeFrames, FrameReader } from './frame-channel';
import type { FromHost, HostConfig, SandboxRunIn, ToHost } from './host-protocol';

/** A run that leaves a timer behind: on the process's own thread it keeps the host's event loop alive. */
const LINGERS = `module.exports = { name: "Lingers", version: "1", props: {}, async run() { setInterval(() => {}, 1000); this.$emit({ ok: true }); } };`;

/** The sandbox host process itself (without bubblewrap): it ends when the app closes it, wherever its runs execute. */
describe('sandbox host process', () => {
  it.each<SandboxRunIn>(['process', 'workers'])('exits with code 0 when the app closes it, though a run left a timer (SANDBOX_RUN_IN=%s)', async (runIn) => {
    const bundle = (await new ComponentPreparer({ npmCacheDir: mkdtempSync(join(tmpdir(), 'ess-host-')), installTimeoutMs: 10_000 }).prepare({ code: LINGERS, fetchText: defaultFetchText() })).ref;
    const config: HostConfig = { runIn, threads: 1, heapMb: 64, vmTimeout: 'adaptive', concurrentTasksPerWorker: 1, workerFile: resolveWorkerFile(), platformRequireFrom: __filename, idleTimeoutMs: 60_000 };
    const child = spawn(process.execPath, [resolveHostFile(), JSON.stringify(config)], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const channel = child.stdio[3] as Socket;
    const frames: FromHost[] = [];
    const reader = new FrameReader(() => 1 << 24, (m) => frames.push(m as FromHost), (e) => frames.push({ t: 'log', level: 'error', obj: { e: e.message } }));
    channel.on('data', (d: Buffer) => reader.push(d));
    const task = { kind: 'execute' as const, bundle, sourceId: 'dc_t', invocationId: 'inv_1', method: 'run' as const, props: {}, db: {}, event: {}, timeoutMs: 5000, limits: { dbMaxBytes: 1 << 20, eventMaxBytes: 1 << 20, emitsPerInvocation: 10 } };
    channel.write(encodeFrames([{ t: 'run', id: 1, task, timeoutMs: 5000, respond: false } satisfies ToHost]));
    while (!frames.some((f) => f.t === 'done')) await new Promise((r) => setTimeout(r, 20));
    const done = frames.find((f) => f.t === 'done') as Extract<FromHost, { t: 'done' }>;
    expect(done.out).toMatchObject({ value: { emits: [{ event: { ok: true } }] } });
    channel.write(encodeFrames([{ t: 'close', graceMs: 100 } satisfies ToHost]));
    // On its own thread the component runtime replaces process.exit (it throws for component code): the host
    // once stayed up after a close, held by the run's timer, until the app killed it.
    expect(await exited).toBe(0);
  }, 30_000);
});
