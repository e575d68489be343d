/**
 * Messages between an app (runner, api) and one account's sandbox host process,
 * as frames (frame-channel.ts: length-prefixed `v8.serialize`) over a socket pair
 * at the host's fd 3; several per write (IpcBatch).
 */
import type { TaskOutcome } from '../worker-pool';
import type { ResponseMessage, WorkerTask } from '../worker-protocol';
import type { Piece } from './frame-pieces';

/** Where an account's runs execute inside its sandbox process (SANDBOX_RUN_IN). */
export type SandboxRunIn = 'process' | 'workers';

/** The host's end of the channel to its app. */
export const HOST_CHANNEL_FD = 3;

/** What the app tells the host when it starts it (argv[2], JSON). */
export interface HostConfig {
  /** Where runs execute: this process's own thread, or `threads` worker threads (SANDBOX_RUN_IN). */
  runIn: SandboxRunIn;
  threads: number;
  heapMb: number;
  vmTimeout: 'always' | 'adaptive' | 'never';
  concurrentTasksPerWorker: number;
  workerFile: string;
  platformRequireFrom: string;
  egressSocket?: string;
  idleTimeoutMs: number;
}

export type ToHost = { t: 'run'; id: number; task: WorkerTask; timeoutMs: number; respond: boolean } | { t: 'close'; graceMs: number };

export type FromHost =
  | { t: 'ready' }
  | { t: 'done'; id: number; out: TaskOutcome<unknown> }
  | { t: 'response'; id: number; payload: ResponseMessage }
  /** A part of the next `done` or `response` of task `id` (frame-pieces.ts). */
  | Piece
  | { t: 'log'; level: 'info' | 'warn' | 'error' | 'debug'; obj: object; msg?: string };
