/** The most bytes of full events one page holds (`expand=event`, a workflow's runs), unless its first event alone is larger. */
export const EXPANDED_PAGE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * SQL of a page of event summaries in id order (`limit` rows at most) that ends where their `size_bytes` reach the
 * query's last parameter together, with at least one row: one query, the sizes summed as the rows are read. A page of
 * 100 events of 500 KB was 50 MB in the api's memory, and a few such requests at once stalled it for everyone.
 */
export function bytesBoundedPageSql(columns: string, where: string, order: 'asc' | 'desc', limit: number): string {
  return `select * from (
       select ${columns}, size_bytes, id_ms, id_seq, sum(size_bytes) over (order by id_ms ${order}, id_seq ${order}) as upto
         from event_summaries where ${where}
        order by id_ms ${order}, id_seq ${order} limit ${limit}) page
      where upto - size_bytes = 0 or upto <= ?
      order by id_ms ${order}, id_seq ${order}`;
}
