import { CliError } from './errors';
import { ApiClient } from './api-client';
import { ConfigOverrides, isInteractive, resolveConfig, ResolvedConfig } from './config';

export type OptionSpec = { type: 'string' | 'boolean'; short?: string; multiple?: boolean; default?: string | boolean };
export type OptionValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

export interface ParsedArgs {
  values: OptionValues;
  positionals: string[];
}

/** What every command receives: lazily resolved config and client, output mode. */
export class CommandContext {
  private resolved?: ResolvedConfig;
  private apiClient?: ApiClient;

  constructor(
    readonly overrides: ConfigOverrides,
    readonly json: boolean,
  ) {}

  get config(): ResolvedConfig {
    this.resolved ??= resolveConfig(this.overrides);
    return this.resolved;
  }

  get client(): ApiClient {
    this.apiClient ??= new ApiClient(this.config);
    return this.apiClient;
  }

  get interactive(): boolean {
    return isInteractive();
  }
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** Lines describing the command's own options. */
  help: string[];
  examples?: string[];
  options: Record<string, OptionSpec>;
  /** How many positional arguments it takes at most; more is a usage error (exit 2). */
  maxPositionals: number;
  run(ctx: CommandContext, args: ParsedArgs): Promise<void>;
}

export function str(values: OptionValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

export function list(values: OptionValues, name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v.map(String) : typeof v === 'string' ? [v] : [];
}

/**
 * A string option that names something (`--name`, `--dc`, `--file`): absent, or its value. An empty one (a script's
 * unset variable) is a usage mistake, never taken as absent: `--dc ""` would deploy a new source, `--file ""` update nothing.
 */
export function textOption(command: string, values: OptionValues, option: string, what: string): string | undefined {
  const value = str(values, option);
  if (value !== undefined && value.trim() === '') throw usageError(command, `--${option} expects ${what}, got "${value}"`);
  return value;
}

/** A usage mistake: exit code 2, as for an unknown command or option. */
export function usageError(command: string, message: string): CliError {
  return new CliError(`${message}; run \`pd ${command} --help\``, 2);
}

export function flag(values: OptionValues, name: string): boolean {
  return values[name] === true;
}

/** The org a command acts in: `--org`, else the profile's `org_id` (PD_ORG_ID). */
export function orgOf(ctx: CommandContext, values: OptionValues): string | undefined {
  return str(values, 'org') ?? ctx.config.orgId;
}

/** Options every command accepts. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  profile: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export const GLOBAL_HELP = [
  '--profile <name>   use a profile of the config file (env PD_PROFILE)',
  '--json             print machine-readable JSON on stdout',
  '-h, --help         show help',
];
