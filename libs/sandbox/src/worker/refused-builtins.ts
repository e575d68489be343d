import { syncBuiltinESMExports } from 'node:module';

/**
 * Replaces export `name` of built-in module `specifier` with a function that throws `ERR_ACCESS_DENIED`, in the
 * CommonJS module and (synced) in its ES module view, so that `import { … }` gets the refusal too. Called on every
 * thread that runs component code, before any component loads.
 */
function refuse(specifier: string, name: string, message: string): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(specifier) as Record<string, unknown>;
  // A plain function, so that `new Worker(…)` throws the refusal too (a method is no constructor); named as the original.
  const refused = function (): never {
    throw Object.assign(new Error(message), { code: 'ERR_ACCESS_DENIED' });
  };
  mod[name] = Object.defineProperty(refused, 'name', { value: name });
  syncBuiltinESMExports();
}

/**
 * What component code may not call although Node's permission model lets it:
 * - `worker_threads.Worker`: a worker started with its own `execArgv` (e.g. `[]`) runs outside the permission model,
 *   so it could spawn processes; the sandbox needs `--allow-worker` for its own pool, which the host process creates
 *   before any component code loads.
 * - `v8.setFlagsFromString`: V8's flags are the process's, and the permission model does not check them:
 *   `--allow-natives-syntax` set from a run handed the code V8's test intrinsics (`%…` calls, which are not
 *   memory-safe) in every script compiled afterwards, and other flags change how the whole process (every run of the
 *   account, the host's own code) compiles, collects and fails.
 */
export function refuseBuiltins(): void {
  refuse('node:worker_threads', 'Worker', 'worker threads are not available to component code in the sandbox');
  refuse('node:v8', 'setFlagsFromString', "V8's flags cannot be changed by component code in the sandbox");
}
