import { createInterface, Interface } from 'node:readline';
import { CliError } from './errors';
import { note, oneLine } from './output';

/**
 * Line prompts on stderr (stdout stays clean for data). `secret` hides the
 * typed characters, as for a password.
 */
export async function ask(question: string, { secret = false } = {}): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  rl.on('SIGINT', () => {
    process.stderr.write('\n');
    process.exit(130);
  });
  if (secret) {
    // readline echoes through this private method; mask everything after the question.
    const muted = rl as Interface & { _writeToOutput?: (s: string) => void };
    let asked = false;
    muted._writeToOutput = (s: string): void => {
      if (!asked) {
        asked = true;
        process.stderr.write(s);
      } else if (s === '\r\n' || s === '\n') process.stderr.write(s);
      else process.stderr.write('*'.repeat(s.length > 0 ? 1 : 0));
    };
  }
  let onClose: (() => void) | undefined;
  try {
    return await new Promise<string>((resolve, reject) => {
      onClose = () => reject(new CliError('no answer: the input was closed'));
      rl.once('close', onClose);
      rl.question(question, resolve);
    });
  } finally {
    // Only our listener: readline restores the terminal in a 'close' listener of its own.
    if (onClose) rl.removeListener('close', onClose);
    rl.close();
  }
}

/** Asks until `parse` accepts the answer; `parse` throws with the reason otherwise. */
export async function askValid<T>(question: string, parse: (answer: string) => T, opts: { secret?: boolean } = {}): Promise<T> {
  for (;;) {
    const answer = await ask(question, opts);
    try {
      return parse(answer);
    } catch (e) {
      note(`  ${oneLine((e as Error).message)}`);
    }
  }
}
