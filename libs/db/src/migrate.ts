import 'reflect-metadata';
import { databaseUrlOrExit, withOrm } from './with-orm';

/** Applies pending migrations to DATABASE_URL. Run once per release, not by every replica. */
export function migrate(databaseUrl: string): Promise<string[]> {
  return withOrm(databaseUrl, async (orm) => (await orm.getMigrator().up()).map((m) => m.name));
}

if (require.main === module) {
  migrate(databaseUrlOrExit()).then(
    (names) => process.stderr.write(`migrations applied: ${names.length ? names.join(', ') : 'none pending'}\n`),
    (e: Error) => {
      process.stderr.write(`migration failed: ${e.message}\n`);
      process.exit(1);
    },
  );
}
