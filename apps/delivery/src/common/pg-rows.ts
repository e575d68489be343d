import type { EntityManager } from '@mikro-orm/postgresql';

/** A column of a multi-row insert, with the Postgres type its array is cast to. */
export interface RowColumn {
  name: string;
  type: 'text' | 'int4' | 'int8' | 'jsonb';
}

interface PgClient {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/**
 * Inserts many rows in one statement, `insert … select * from unnest($1::t[], …)`:
 * one array parameter per column, sent apart from the text (the ORM's own
 * `execute` inlines every value into the SQL text, three times the CPU per row
 * on the delivery hot path). `suffix` follows the select (`on conflict do nothing`).
 */
export async function insertRows(em: EntityManager, table: string, columns: RowColumn[], rows: unknown[][], suffix = ''): Promise<void> {
  if (!rows.length) return;
  const text = `insert into ${table} (${columns.map((c) => c.name).join(', ')}) select * from unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')}) ${suffix}`;
  const values = columns.map((_, i) => rows.map((r) => r[i]));
  const client = em.getConnection().getKnex().client as { acquireConnection(): Promise<PgClient>; releaseConnection(c: PgClient): Promise<void> };
  const conn = await client.acquireConnection();
  try {
    await conn.query(text, values);
  } finally {
    await client.releaseConnection(conn);
  }
}
