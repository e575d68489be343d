import 'reflect-metadata';
import { EntityManager } from '@mikro-orm/postgresql';
import { databaseUrlOrExit, withOrm } from '@app/db';
import { AccountsService } from '../accounts/accounts.service';
import { REGISTRY_COMMANDS } from '../components/registry.admin';
import { SOURCE_COMMANDS } from '../sources/sources.admin';
import { UsageError } from './usage-error';

export { UsageError };

/** One admin command: parsed flags in, one JSON-serialisable result out. */
export type AdminCommand = (flags: Record<string, string>, em: EntityManager, positional: string[]) => Promise<unknown>;

const required = (flags: Record<string, string>, name: string): string => {
  const v = flags[name];
  if (!v) throw new UsageError(`--${name} is required`);
  return v;
};

/** The operator commands. More contexts register theirs in `ADMIN_COMMANDS`. */
export const ADMIN_COMMANDS: Record<string, AdminCommand> = {
  'users create': async (f, em) => {
    const { user, apiKey } = await new AccountsService(em).createUser({ username: required(f, 'username'), email: required(f, 'email'), plan: f.plan });
    return { id: user.id, api_key: apiKey, username: user.username, email: user.email, plan: user.plan };
  },
  'users set-plan': async (f, em) => {
    const user = await new AccountsService(em).setPlan(required(f, 'user'), required(f, 'plan'));
    return { id: user.id, plan: user.plan };
  },
  'keys rotate': async (f, em) => {
    const userId = required(f, 'user');
    return { id: userId, api_key: await new AccountsService(em).rotateKey(userId) };
  },
  'keys revoke': async (f, em) => {
    const userId = required(f, 'user');
    return { id: userId, revoked: await new AccountsService(em).revokeKeys(userId) };
  },
  'orgs create': async (f, em) => {
    const org = await new AccountsService(em).createOrg({ name: required(f, 'name'), orgname: required(f, 'orgname'), email: f.email });
    return { id: org.id, name: org.name, orgname: org.orgname, email: org.email };
  },
  'orgs add-member': async (f, em) => {
    const m = await new AccountsService(em).addMember(required(f, 'org'), required(f, 'user'));
    return { org_id: m.orgId, user_id: m.userId };
  },
  'orgs remove-member': async (f, em) => {
    const org = required(f, 'org');
    const user = required(f, 'user');
    const { removed } = await new AccountsService(em).removeMember(org, user);
    return { org_id: org, user_id: user, removed };
  },
  ...REGISTRY_COMMANDS,
  ...SOURCE_COMMANDS,
};

const USAGE = `usage: npm run --silent admin -- <command> [flags]
  users create --username <u> --email <e> [--plan free|paid]
  users set-plan --user <u_id> --plan free|paid
  keys rotate --user <u_id>
  keys revoke --user <u_id>
  orgs create --name <name> --orgname <slug> [--email <e>]
  orgs add-member --org <o_id> --user <u_id>
  orgs remove-member --org <o_id> --user <u_id>
  registry publish <file>  (or --file <file>)
  registry seed [--dir <dir>]
  registry list
  sources set-timeout --source <dc_id> --seconds <n>|default`;

/** The flags each command takes, as USAGE lists them: anything else is a typo the operator should hear of. */
const COMMAND_FLAGS: Record<string, string[]> = Object.fromEntries(
  USAGE.split('\n')
    .slice(1)
    .map((line) => {
      const words = line.trim().split(/\s+/);
      return [words.slice(0, 2).join(' '), words.filter((w) => /^\[?--/.test(w)).map((w) => w.replace(/^\[?--/, ''))];
    }),
);

export function parseArgs(argv: string[]): { command: string; flags: Record<string, string>; positional: string[] } {
  const words: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      // No command takes a flag without a value: `--username --email e` must not create a user named "true".
      if (eq < 0 && (i + 1 >= argv.length || argv[i + 1].startsWith('--'))) throw new UsageError(`${a} needs a value`);
      if (eq > 0) flags[a.slice(2, eq)] = a.slice(eq + 1);
      else flags[a.slice(2)] = argv[++i];
    } else words.push(a);
  }
  const command = words.slice(0, 2).join(' ');
  const known = COMMAND_FLAGS[command];
  const unknown = known && Object.keys(flags).find((f) => !known.includes(f));
  if (unknown !== undefined) throw new UsageError(`unknown flag --${unknown} for "${command}" (${known.length ? `it takes ${known.map((f) => `--${f}`).join(', ')}` : 'it takes no flags'})`);
  return { command, flags, positional: words.slice(2) };
}

export async function runAdmin(argv: string[], databaseUrl: string): Promise<unknown> {
  const { command, flags, positional } = parseArgs(argv);
  const handler = ADMIN_COMMANDS[command];
  if (!handler) throw new UsageError(command ? `unknown command "${command}"\n${USAGE}` : USAGE);
  return withOrm(databaseUrl, (orm) => handler(flags, orm.em.fork(), positional));
}

if (require.main === module) {
  runAdmin(process.argv.slice(2), databaseUrlOrExit()).then(
    (result) => process.stdout.write(JSON.stringify(result) + '\n'),
    (e: Error) => {
      process.stderr.write(`error: ${e.message}\n`);
      process.exit(e instanceof UsageError ? 64 : 1);
    },
  );
}
