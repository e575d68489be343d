import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { admin, createUser } from './support/accounts';
import { startSystem, System } from './support/system';
import { sql } from './events.helpers';

const AT_ONCE = 8;
/** Rounds of each race: the window between a command's check and its insert is a few milliseconds wide. */
const ROUNDS = 3;

/**
 * The admin CLI's commands run at the same moment (two operators, a provisioning script retried). Each checks for the
 * row before inserting it, and a command that lost the race to the unique constraint ended in the driver's error
 * (`duplicate key value violates unique constraint …`) instead of the answer a second command gets.
 */
describe('admin CLI commands run at once', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => system?.stop());

  /** Runs the admin CLI `AT_ONCE` times together with the same arguments: each one's exit code, stdout and stderr. */
  const together = (args: string[]): Promise<{ code: number | null; out: string; err: string }[]> =>
    Promise.all(
      Array.from({ length: AT_ONCE }, () => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, [join(__dirname, '..', 'scripts', 'admin.js'), ...args], { env: { ...process.env, DATABASE_URL: system.databaseUrl, DATA_DIR: system.env.DATA_DIR } });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.on('close', (code) => resolve({ code, out, err }));
      })),
    );

  it('orgs add-member: every one answers the membership, and there is one', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const user = createUser(system);
      const org = admin(system, ['orgs', 'create', '--name', 'Race', '--orgname', `race-${user.id.slice(2, 12).toLowerCase()}`]);
      const runs = await together(['orgs', 'add-member', '--org', org.id, '--user', user.id]);
      for (const r of runs) expect([r.code, r.err, r.out && JSON.parse(r.out)]).toEqual([0, '', { org_id: org.id, user_id: user.id }]);
      expect(await sql(system, 'select 1 from org_members where org_id = $1 and user_id = $2', [org.id, user.id])).toHaveLength(1);
    }
  });

  it.each([
    ['users create', 'username', (name: string) => ['users', 'create', '--username', name, '--email', `${name}@example.com`], 'select 1 from users where username = $1'],
    ['orgs create', 'orgname', (name: string) => ['orgs', 'create', '--name', 'Race', '--orgname', name], 'select 1 from orgs where orgname = $1'],
  ] as const)('%s with one %s: one made, every other command told it is taken', async (_command, field, args, rows) => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `race-${round}-${Date.now() % 1e9}`;
      const runs = await together(args(name));
      expect(runs.filter((r) => r.code === 0)).toHaveLength(1);
      for (const r of runs.filter((x) => x.code !== 0)) expect([r.code, r.err]).toEqual([1, `error: ${field} ${name} is taken\n`]);
      expect(await sql(system, rows, [name])).toHaveLength(1);
    }
  });
});
