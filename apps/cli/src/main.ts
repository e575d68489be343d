import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Command, CommandContext, GLOBAL_HELP, GLOBAL_OPTIONS, OptionSpec, str } from './command';
import { configCommand, loginCommand } from './commands/account';
import { devCommand } from './commands/dev';
import { eventsCommand, logsCommand } from './commands/events';
import { deleteCommand, deployCommand, listCommand, publishCommand, runCommand, updateCommand } from './commands/sources';
import { replayCommand, runsCommand } from './commands/workflows';
import { CliError, describeError } from './errors';
import { bold, oneLine } from './output';

const COMMANDS: Command[] = [loginCommand, configCommand, deployCommand, devCommand, publishCommand, listCommand, eventsCommand, logsCommand, updateCommand, deleteCommand, runCommand, replayCommand, runsCommand];
const ALIASES: Record<string, string> = { ls: 'list', rm: 'delete', log: 'logs', event: 'events' };

/** Exit code for usage mistakes (unknown command or option), as most CLIs do. */
const USAGE_EXIT = 2;
/** The options `pd` takes without a command (`--profile` and its value are skipped apart). */
const GLOBAL_FLAGS = new Set(['--profile', '--json', '--help', '-h']);

const commandNamed = (name: string): Command | undefined => COMMANDS.find((c) => c.name === (ALIASES[name] ?? name));
const unknownCommand = (name: string): number => fail(`unknown command "${name}"; run \`pd --help\` for the list`, USAGE_EXIT);

function version(): string {
  for (const p of [join(__dirname, '..', '..', '..', '..', 'package.json'), join(__dirname, '..', '..', '..', 'package.json')]) {
    try {
      return (JSON.parse(readFileSync(p, 'utf8')) as { version: string }).version;
    } catch {
      /* try the next layout */
    }
  }
  return 'unknown';
}

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    `${bold('pd')} — command-line tool for the event source service (Pipedream-compatible)`,
    '',
    'Usage: pd <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Global options:',
    ...GLOBAL_HELP.map((l) => `  ${l}`),
    '  -v, --version      print the version',
    '',
    'Configuration: ~/.config/pipedream/config (profiles); env PD_API_KEY, PD_API_BASE_URL, PD_ORG_ID, PD_PROFILE.',
    'Run `pd <command> --help` for the options of a command.',
  ].join('\n');
}

function commandHelp(c: Command): string {
  const lines = [`${bold(`pd ${c.name}`)} — ${c.summary}`, '', `Usage: ${c.usage}`];
  if (c.help.length > 0) lines.push('', 'Options:', ...c.help.map((l) => `  ${l}`));
  lines.push('', 'Global options:', ...GLOBAL_HELP.map((l) => `  ${l}`));
  if (c.examples?.length) lines.push('', 'Examples:', ...c.examples.map((e) => `  ${e}`));
  return lines.join('\n');
}

/** Finds the command word, skipping global options that come before it (`pd --profile x list`). */
function splitCommand(argv: string[]): { name?: string; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--profile') {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    return { name: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { rest: argv };
}

/** `pd events -f … | head -3`: the reader went away, which ends the command normally, not with a stack trace. */
function exitQuietlyOnClosedStdout(): void {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

/** Runs the CLI; resolves with the process exit code. */
export async function main(argv: string[]): Promise<number> {
  exitQuietlyOnClosedStdout();
  const { name, rest } = splitCommand(argv);
  if (!name) {
    if (rest.includes('--version') || rest.includes('-v')) return print(version());
    // Global options without a command (`pd --json`, `pd --profile staging`) are `pd` alone: the list of commands.
    const unknown = rest.find((a, i) => !GLOBAL_FLAGS.has(a) && rest[i - 1] !== '--profile');
    return unknown === undefined ? print(mainHelp()) : fail(`unknown option ${unknown}; run \`pd --help\``, USAGE_EXIT);
  }
  if (name === 'help') {
    const topic = splitCommand(rest).name;
    if (topic === undefined) return print(mainHelp());
    const target = commandNamed(topic);
    return target ? print(commandHelp(target)) : unknownCommand(topic);
  }
  const command = commandNamed(name);
  if (!command) return unknownCommand(name);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rest, options: { ...GLOBAL_OPTIONS, ...command.options } as Record<string, OptionSpec>, allowPositionals: true, allowNegative: true, strict: true });
  } catch (e) {
    return fail(`${describeError(e).replace(/\. To specify.*$/s, '')}; run \`pd ${command.name} --help\``, USAGE_EXIT);
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (values.help) return print(commandHelp(command));
  const extra = parsed.positionals.slice(command.maxPositionals);
  if (extra.length > 0) return fail(`unexpected argument${extra.length > 1 ? 's' : ''} ${extra.map((a) => `"${a}"`).join(' ')} (usage: ${command.usage}); run \`pd ${command.name} --help\``, USAGE_EXIT);
  const ctx = new CommandContext({ profile: str(values, 'profile') }, values.json === true);
  try {
    await command.run(ctx, { values, positionals: parsed.positionals });
    return 0;
  } catch (e) {
    return fail(describeError(e), e instanceof CliError ? e.exitCode : 1);
  }
}

function print(text: string): number {
  process.stdout.write(text + '\n');
  return 0;
}

function fail(message: string, code: number): number {
  const label = process.stderr.isTTY && !process.env.NO_COLOR ? '\u001b[31mError:\u001b[0m' : 'Error:';
  process.stderr.write(`${label} ${oneLine(message)}\n`);
  return code;
}

/**
 * Exits once everything written to stdout and stderr has left the process. Writes to a pipe are
 * asynchronous: exiting at once cut `pd list sources --json | jq` off at the pipe's 64 KiB.
 */
export function exitAfterOutput(code: number): void {
  let waiting = 2;
  const done = (): void => {
    if (--waiting === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}
