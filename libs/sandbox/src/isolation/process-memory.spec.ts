import { spawn } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { sandboxTmp } from './process-memory';

describe('sandboxTmp', () => {
  it("reads nothing while the process's child still has the app's root (a sandbox being set up): the app's /tmp is not the sandbox's", async () => {
    // A shell and its child, as bubblewrap and its child before the child's root is the sandbox's.
    const shell = spawn('sh', ['-c', 'sleep 30 & wait'], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 300));
      const own = statfsSync('/tmp');
      expect(own.files - own.ffree).toBeGreaterThan(0); // what the check once counted
      expect(sandboxTmp(shell.pid!, 64 * 1024 * 1024)).toEqual({ dataBytes: 0, files: 0 });
    } finally {
      shell.kill('SIGKILL');
    }
  });
});
