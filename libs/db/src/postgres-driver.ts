import { PostgreSqlDriver, PostgreSqlPlatform } from '@mikro-orm/postgresql';

/**
 * `s` as a Postgres string literal, the same text node-postgres's `escapeLiteral` writes (quotes doubled; with a
 * backslash, an `E''` literal with backslashes doubled), made by two native replaces instead of one string
 * concatenation per character: on a batch of summaries (a few hundred KiB of JSON) that loop was over a quarter
 * of the delivery app's allocations, and on the insert of a 5 MiB component it held the api's event loop ~0.5 s
 * (docs/benchmarks.md).
 */
export function pgLiteral(s: string): string {
  const quoted = s.replaceAll("'", "''");
  return s.includes('\\') ? ` E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/** PostgreSqlPlatform inlining strings (MikroORM writes every parameter into the SQL text) with pgLiteral. */
export class PostgresPlatform extends PostgreSqlPlatform {
  override escape(value: unknown): string {
    return typeof value === 'string' ? pgLiteral(value) : super.escape(value);
  }
}

/** MikroORM's Postgres driver on PostgresPlatform (every app's ORM: ormOptions). */
export class PostgresDriver extends PostgreSqlDriver {
  protected override readonly platform = new PostgresPlatform();
}
