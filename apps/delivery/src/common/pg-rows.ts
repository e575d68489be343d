import type { EntityManager } from '@mikro-orm/postgresql';
import { pgLiteral } from '@app/db';

/** A column of a multi-row insert, with the Postgres type its values are cast to. */
export interface RowColumn {
  name: string;
  type: 'text' | 'int4' | 'int8' | 'json' | 'jsonb';
}

interface PgClient {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

/** A lone UTF-16 surrogate as JSON.stringify escapes it: Postgres's JSON parser refuses it. */
const LONE_SURROGATE = /\\ud[89a-f]/i;

/**
 * Inserts many rows in one statement: the rows go as one JSON array of arrays, a single
 * parameter sent apart from the text (the ORM's own `execute` inlines every value into the
 * SQL text, three times the CPU per row on the delivery hot path), and each column is read
 * back with `r->>i` and cast. One JSON.stringify instead of one Postgres array literal per
 * column, which node-postgres builds in JavaScript (a regex escape per value: about a twentieth
 * of the delivery app's CPU). Text values must be free of U+0000 (pgText) and jsonb ones
 * their JSON text (pgJson). `suffix` follows the select (`on conflict do nothing`).
 * Rows holding a lone surrogate go as one array parameter per column instead, where
 * node-postgres's UTF-8 encoding replaces it as it always did.
 *
 * `asyncCommit`: the insert commits without waiting for its WAL to be flushed (`synchronous_commit` off for its
 * transaction alone): the statement and a `set local` go as one simple query, one implicit transaction, with the
 * rows as a literal instead of a parameter. Rows holding a lone surrogate commit as any other statement.
 */
export async function insertRows(em: EntityManager, table: string, columns: RowColumn[], rows: unknown[][], suffix = '', asyncCommit = false): Promise<void> {
  if (!rows.length) return;
  const names = columns.map((c) => c.name).join(', ');
  const json = JSON.stringify(rows);
  const select = (source: string): string => `insert into ${table} (${names}) select ${columns.map((c, i) => `(r->>${i})::${c.type}`).join(', ')} from jsonb_array_elements(${source}::jsonb) r ${suffix}`;
  const client = em.getConnection().getKnex().client as { acquireConnection(): Promise<PgClient>; releaseConnection(c: PgClient): Promise<void> };
  const conn = await client.acquireConnection();
  try {
    if (LONE_SURROGATE.test(json)) {
      await conn.query(`insert into ${table} (${names}) select * from unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')}) ${suffix}`, columns.map((_, i) => rows.map((r) => r[i])));
    } else if (asyncCommit) {
      await conn.query(`set local synchronous_commit to off; ${select(pgLiteral(json))}`);
    } else {
      await conn.query(select('$1'), [json]);
    }
  } finally {
    await client.releaseConnection(conn);
  }
}
