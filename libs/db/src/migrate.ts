import 'reflect-metadata';
import { MikroORM } from '@mikro-orm/postgresql';
import { loadConfigOrExit } from '@app/config';
import { ormOptions } from './orm.config';

/** Applies pending migrations to DATABASE_URL. Run once per release, not by every replica. */
export async function migrate(databaseUrl: string): Promise<string[]> {
  const orm = await MikroORM.init(ormOptions(databaseUrl));
  try {
    const applied = await orm.getMigrator().up();
    return applied.map((m) => m.name);
  } finally {
    await orm.close(true);
  }
}

if (require.main === module) {
  const config = loadConfigOrExit();
  if (!config.databaseUrl) {
    process.stderr.write('DATABASE_URL is not set\n');
    process.exit(78);
  }
  migrate(config.databaseUrl).then(
    (names) => process.stderr.write(`migrations applied: ${names.length ? names.join(', ') : 'none pending'}\n`),
    (e: Error) => {
      process.stderr.write(`migration failed: ${e.message}\n`);
      process.exit(1);
    },
  );
}
