import { MikroORM } from '@mikro-orm/postgresql';
import { loadConfigOrExit, urlForDisplay } from '@app/config';
import { ormOptions } from './orm.config';

/** Opens an ORM on `databaseUrl` for one piece of work (a CLI command, a migration) and always closes it. */
export async function withOrm<T>(databaseUrl: string, work: (orm: MikroORM) => Promise<T>): Promise<T> {
  // init connects (and creates the database when missing): its bare "connect ECONNREFUSED" would not say to what.
  const orm = await MikroORM.init(ormOptions(databaseUrl)).catch((e: Error) => {
    throw new Error(`cannot connect to Postgres at DATABASE_URL (${urlForDisplay(databaseUrl)}): ${e.message}`);
  });
  try {
    return await work(orm);
  } finally {
    await orm.close(true);
  }
}

/** The validated DATABASE_URL of a command-line entry point; exits 78 (configuration error) when unset. */
export function databaseUrlOrExit(): string {
  const config = loadConfigOrExit();
  if (!config.databaseUrl) {
    process.stderr.write('DATABASE_URL is not set\n');
    process.exit(78);
  }
  return config.databaseUrl;
}

