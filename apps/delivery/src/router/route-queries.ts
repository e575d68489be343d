import { decodeJson, EncryptedValue, RoutesChanged } from '@app/contracts';

// What routing reads from Postgres (`SubscriptionCache`), and which routes a change announcement names.

export interface SubRow {
  id: string;
  owner_id: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
  /** The owner of the listener (a source's, workflow's or webhook's). */
  listener_owner: string;
}

/**
 * A subscription routes while its listener exists and while its owner can still reach the owners of both
 * ends: the same account, or a user and an org they belong to (either way). Between two orgs (a route a
 * member of both made, owned by one of them) there is no membership of orgs in orgs to judge it: it routes
 * while the user who made it (`created_by`) belongs to both — otherwise an org's events would keep flowing,
 * after that member left it, through a subscription the org can neither see nor remove (it belongs to the
 * other org). The routes an auto-subscription gives new sources and workflows record its maker the same way. A
 * route whose maker is unknown (`created_by` null: made before makers were recorded, by migration 20261125000000 for
 * subscriptions and 20261130000000 for auto-subscriptions) does not route between two orgs: nobody can be shown to
 * belong to both.
 * Workflow triggers (null too) have both ends of their owner's, and routes between a user and an org are judged
 * by membership alone, so neither needs a maker. So a member removed from an org stops receiving the org's events
 * through subscriptions they made while a member, and the org's own subscriptions stop feeding that member's
 * personal listeners. A glob's emitters are its owner's.
 * The ends' owners come from left joins on primary keys (each end is at most one row of each table; the first
 * table that has it wins): as correlated subqueries, inlined into every branch that read them, the same load took
 * 13.9–18.0 s for 500,000 subscriptions on a scratch database against 3.7–4.5 s (same rows, same order).
 */
const MEMBER = (user: string, org: string): string => `exists (select 1 from org_members m where m.user_id = ${user} and m.org_id = ${org})`;
const REACHES = (owner: string, end: string, creator: string): string => `(${owner} = ${end}
  or (${owner} like 'o\\_%' and ${end} like 'o\\_%' and ${MEMBER(creator, owner)} and ${MEMBER(creator, end)})
  or ${MEMBER(owner, end)} or ${MEMBER(end, owner)})`;
/** The routable subscriptions (`where`: which subscriptions to consider, by their columns as `s.…`), in id order. */
export const routableSubscriptions = (where = 'true'): string => `with ends as (
  select s.id, s.owner_id, s.emitter_id, s.listener_id, s.event_name, s.created_by,
    case when s.emitter_id like '%*' then s.owner_id else coalesce(ex.owner_id, ep.owner_id) end as emitter_owner,
    coalesce(lx.owner_id, lw.owner_id, lp.owner_id) as listener_owner
  from subscriptions s
  left join sources ex on ex.id = s.emitter_id
  left join workflows ep on ep.id = s.emitter_id
  left join sources lx on lx.id = s.listener_id and lx.deleted_at is null
  left join webhooks lw on lw.id = s.listener_id and lw.active
  left join workflows lp on lp.id = s.listener_id and lp.deleted_at is null
  where ${where})
select id, owner_id, emitter_id, listener_id, event_name, listener_owner from ends
 where listener_owner is not null and ${REACHES('owner_id', 'listener_owner', 'created_by')}
   and (emitter_owner is null or ${REACHES('owner_id', 'emitter_owner', 'created_by')})
 order by id`;

/**
 * A JSON array of strings as a Postgres array, to compare a column with (`= any(${TEXTS})`): unlike `in (select …)`,
 * two such comparisons joined by `or` still use their indexes (0.2 ms against 94 ms at 500,000 subscriptions).
 */
export const TEXTS = 'array(select jsonb_array_elements_text(?::jsonb))';
export const WEBHOOK_COLUMNS = 'id, owner_id, url, url_sealed, secret, active';

/** The routing maps' key of a subscription: its emitter, or for a glob (`dc_*`) its owner and the prefix. */
export const routeKey = (emitterId: string, ownerId: string): string => (emitterId.endsWith('*') ? `${ownerId}|${emitterId.slice(0, -1)}` : emitterId);
export const isGlobKey = (key: string): boolean => key.includes('|');
/** The glob (`dc_*`, `p_*`) that covers an emitter when its owner owns the glob; none for other emitters. */
export const globOf = (emitterId: string): string | undefined => (emitterId.startsWith('dc_') ? 'dc_*' : emitterId.startsWith('p_') ? 'p_*' : undefined);
/**
 * The routable subscriptions of one listener that cover an event (parameters: listener id, channel, emitter id, the
 * emitter's glob or null, the event's owner): what the cache's `match` finds for that listener, read from Postgres.
 */
export const LISTENER_ROUTES_SQL = routableSubscriptions(`s.listener_id = ? and s.event_name = ? and (s.emitter_id = ? or (s.emitter_id = ? and s.owner_id = ?))`);

/** The routes a `changed.*` payload names; undefined (everything is read again) without a payload or with one not of that shape. */
export function routesOf(data: Uint8Array): RoutesChanged | undefined {
  if (!data.length) return undefined;
  try {
    const { emitters = [], listeners = [] } = decodeJson<RoutesChanged>(data) ?? {};
    const named = Array.isArray(emitters) && Array.isArray(listeners)
      && emitters.every((e) => typeof e?.emitter_id === 'string' && typeof e.owner_id === 'string')
      && listeners.every((l) => typeof l === 'string');
    return named ? { emitters, listeners } : undefined;
  } catch {
    return undefined;
  }
}

/** `url_sealed`: the url as given, encrypted (null on a row saved before urls were, until the api seals it: `url` is it then). */
export type WebhookRow = { id: string; owner_id: string; url: string; url_sealed: EncryptedValue | null; secret: EncryptedValue; active: boolean };

