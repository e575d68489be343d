import { syncBuiltinESMExports } from 'node:module';

/**
 * Takes `v8.setFlagsFromString` away from component code. V8's flags are the process's, and Node's permission model
 * does not check them: `--allow-natives-syntax` set from a run handed the code V8's test intrinsics (`%…` calls,
 * which are not memory-safe: they assume a caller that does not lie to them) in every script compiled afterwards, and
 * other flags change how the whole process (every run of the account, the host's own code) compiles, collects and
 * fails. Called once per thread before any component loads; the ES module view of `node:v8` is synced too.
 */
export function refuseV8Flags(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const v8 = require('node:v8') as { setFlagsFromString: unknown };
  v8.setFlagsFromString = function setFlagsFromString(): never {
    throw Object.assign(new Error("V8's flags cannot be changed by component code in the sandbox"), { code: 'ERR_ACCESS_DENIED' });
  };
  syncBuiltinESMExports();
}
