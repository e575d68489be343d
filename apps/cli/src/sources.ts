import { ApiClient } from './api-client';
import { arr, bool, data, dict, json, num, obj, opt, ShapeOf, str } from './answer-shape';
import { CliError, isNotFound } from './errors';
import { PROP_DESCRIPTOR } from './props';

/** The spec's Source: the fields `pd` reads (the rest of it passes through to `--json`). */
export const SOURCE = obj({ id: str, component_id: str, configured_props: dict, active: bool, name: str, name_slug: str });
export type Source = ShapeOf<typeof SOURCE>;

/** The spec's Component: the fields `pd` reads. */
export const COMPONENT = obj({ id: str, name: str, version: opt(str), key: opt(str), type: opt(str), configurable_props: opt(arr(PROP_DESCRIPTOR)) });
export type Component = ShapeOf<typeof COMPONENT>;

/** An event summary (of an emit, `$logs` or `$errors`): the event itself is any JSON. */
export const EVENT_SUMMARY = obj({ id: str, indexed_at_ms: num, event: json, metadata: obj({ name: opt(str) }), summary: opt(str) });
export type EventSummary = ShapeOf<typeof EVENT_SUMMARY>;

const SOURCE_ID = /^dc_[A-Za-z0-9_-]+$/;

export function listSources(client: ApiClient, orgId?: string): Promise<Source[]> {
  return client.listAll(orgId ? `/orgs/${encodeURIComponent(orgId)}/sources` : '/users/me/sources', SOURCE);
}

/**
 * Finds a source by id (`dc_…`), name_slug or name among the org's sources
 * (`--org` or the profile's) and the caller's own. An unknown or ambiguous
 * reference is an error, never an empty result or a guess.
 */
export async function resolveSource(client: ApiClient, ref: string, orgId?: string): Promise<Source> {
  if (SOURCE_ID.test(ref)) {
    // `GET /sources/{id}` (an extension of ours) also reaches sources of the caller's orgs.
    const res = await onSource(ref, () => client.get(`/sources/${encodeURIComponent(ref)}`, data(SOURCE)));
    return res.data;
  }
  // With an org (flag or profile), its sources come first, then the caller's own.
  const sources = orgId ? [...(await listSources(client, orgId)), ...(await listSources(client))] : await listSources(client);
  const bySlug = sources.find((s) => s.id === ref || s.name_slug === ref);
  if (bySlug) return bySlug;
  // Names need not be unique (slugs are): an ambiguous name is an error, not a guess.
  for (const same of [(s: Source) => s.name === ref, (s: Source) => s.name.toLowerCase() === ref.toLowerCase()]) {
    const named = sources.filter(same);
    if (named.length > 1) {
      throw new CliError(`${named.length} sources are named "${ref}": use an id or a name_slug (${named.map((s) => `${s.id} ${s.name_slug}`).join(', ')})`);
    }
    if (named.length === 1) return named[0];
  }
  const where = orgId ? `org ${orgId} or your account` : 'your account';
  throw new CliError(`source "${ref}" not found: no source in ${where} has that id, name or name_slug (see \`pd list sources\`)`);
}

/** The id to call: a `dc_` id is used as given (the API answers 404 if it is unknown); a name is looked up. */
export async function resolveSourceId(client: ApiClient, ref: string, orgId?: string): Promise<string> {
  if (SOURCE_ID.test(ref)) return ref;
  return (await resolveSource(client, ref, orgId)).id;
}

/** Endpoint URL of an HTTP source (`configured_props.<prop>.endpoint_url`), if it has one. */
export function endpointUrl(source: Pick<Source, 'configured_props'>): string | undefined {
  for (const value of Object.values(source.configured_props ?? {})) {
    if (value && typeof value === 'object' && typeof (value as { endpoint_url?: unknown }).endpoint_url === 'string') {
      return (value as { endpoint_url: string }).endpoint_url;
    }
  }
  return undefined;
}

export function sseUrl(client: ApiClient, sourceId: string, stream: 'emits' | 'observations' = 'emits'): string {
  return `${client.origin}/sse/dc/${sourceId}/${stream}`;
}

/**
 * The props a source holds, as input for `PUT`: HTTP endpoints are dropped (the
 * server keeps them), timer views go back to `{ intervalSeconds }` / `{ cron }`,
 * masked secrets stay masked (the server keeps their stored values).
 */
export function propsAsInput(view: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(view ?? {})) {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      if ('endpoint_url' in o) continue;
      if ('interval_seconds' in o && 'cron' in o) {
        input[name] = o.cron ? { cron: o.cron, ...(o.timezone ? { timezone: o.timezone } : {}) } : { intervalSeconds: o.interval_seconds };
        continue;
      }
    }
    input[name] = v;
  }
  return input;
}

/** Turns a 404 on a source route into the CLI's unknown-source message. */
export async function onSource<T>(ref: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (isNotFound(e)) throw new CliError(`source "${ref}" not found (HTTP 404)`);
    throw e;
  }
}
