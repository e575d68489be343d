import { DocOperation, fillPath, Json } from './openapi-requests';

/**
 * Requests a hostile tenant sends to every operation of the OpenAPI document: its own valid request
 * (the baseline), then the same with another account's ids put in one place at a time — a path
 * parameter, or a query or body field that names a resource — and with all of them at once.
 * Generated from the document, so a route added later is swept without touching the test.
 */

/** Ids of one kind: `dc` sources, `p` workflows, `wh` webhooks, `sc` components (ids or keys), `o` orgs. */
export type Kind = 'dc' | 'p' | 'wh' | 'sc' | 'o';
export type Ids = Record<Kind, string[]>;

export interface Probe {
  label: string;
  method: string;
  path: string;
  query: Record<string, string>;
  body?: Json;
  /** The victim's values this request carries (they may be echoed back; nothing else of the victim may be). */
  sent: string[];
  /** Whether a victim's id is in it (then the answer must be 404). */
  hostile: boolean;
  op: DocOperation;
}

/** Fields that name a resource, and the kinds of id each takes. */
export const ID_FIELDS: Record<string, Kind[]> = {
  org_id: ['o'],
  component_id: ['sc'],
  source_id: ['dc'],
  emitter_id: ['dc', 'p'],
  listener_id: ['wh', 'dc', 'p'],
};

/** The kind of a path parameter, from its name or the segment before it. */
export function kindOfParam(path: string, name: string): Kind | 'none' | undefined {
  if (name === 'org_id') return 'o';
  if (name === 'keyOrId' || name === 'key') return 'sc';
  if (name === 'prop' || name === 'app' || name === 'channel') return 'none';
  const before = path.split('/').slice(0, path.split('/').indexOf(`{${name}}`)).pop();
  return ({ sources: 'dc', dc: 'dc', workflows: 'p', p: 'p', webhooks: 'wh', components: 'sc', orgs: 'o' } as Record<string, Kind>)[before ?? ''];
}

export interface Attacker {
  /** The attacker's own value for each path parameter and field (`undefined`: leave the field out). */
  own(op: DocOperation, name: string): unknown;
  /** Their own org, to send the hostile requests once more inside it. */
  org?: string;
}

/** Names of the body fields (the document also lists them as query parameters) and of the real query parameters. */
function fieldsOf(op: DocOperation): { body: string[]; query: string[] } {
  const body = op.body ? Object.keys((op.body.properties as Json | undefined) ?? {}).filter((n) => n !== 'include' && n !== 'exclude') : [];
  const query = op.parameters.filter((p) => p.in === 'query' && !body.includes(p.name) && p.name !== 'include' && p.name !== 'exclude').map((p) => p.name);
  return { body, query };
}

/** Every probe of one operation: the attacker's own request, then each victim id in each place. */
export function probesOf(op: DocOperation, attacker: Attacker, victim: Ids, primary: Record<Kind, string>): Probe[] {
  const { body: bodyFields, query: queryFields } = fieldsOf(op);
  const pathParams = op.parameters.filter((p) => p.in === 'path').map((p) => p.name);
  const baseParams: Record<string, string> = {};
  for (const name of pathParams) baseParams[name] = String(attacker.own(op, name));
  const baseBody: Json = {};
  const baseQuery: Record<string, string> = {};
  for (const name of bodyFields) if (attacker.own(op, name) !== undefined) baseBody[name] = attacker.own(op, name);
  for (const name of queryFields) if (attacker.own(op, name) !== undefined) baseQuery[name] = String(attacker.own(op, name));
  const probe = (label: string, params: Record<string, string>, query: Record<string, string>, body: Json | undefined, sent: string[]): Probe => ({
    label: `${op.method} ${op.path} ${label}`,
    method: op.method,
    path: fillPath(op.path, params),
    query,
    body: op.body ? body : undefined,
    sent,
    hostile: sent.length > 0,
    op,
  });
  const out: Probe[] = [probe('(own)', baseParams, baseQuery, baseBody, [])];
  const candidates = (kinds: Kind[]): string[] => kinds.flatMap((k) => victim[k]);
  const hostile: Probe[] = [];
  for (const name of pathParams) {
    const kind = kindOfParam(op.path, name);
    if (kind === 'none') continue;
    for (const id of kind ? victim[kind] : candidates(['dc', 'p', 'wh', 'sc', 'o'])) hostile.push(probe(`${name}=${id}`, { ...baseParams, [name]: id }, baseQuery, baseBody, [id]));
  }
  for (const [name, kinds] of Object.entries(ID_FIELDS)) {
    const inBody = bodyFields.includes(name);
    if (!inBody && !queryFields.includes(name) && name !== 'org_id') continue;
    for (const id of candidates(kinds)) {
      if (inBody) hostile.push(probe(`body ${name}=${id}`, baseParams, baseQuery, { ...baseBody, [name]: id }, [id]));
      const body = { ...baseBody };
      delete body[name];
      hostile.push(probe(`query ${name}=${id}`, baseParams, { ...baseQuery, [name]: id }, body, [id]));
    }
  }
  // Everything at once: for subscriptions, exactly the victim's own subscription.
  const allParams = { ...baseParams };
  const allBody = { ...baseBody };
  const allQuery = { ...baseQuery };
  const sent: string[] = [];
  for (const name of pathParams) {
    const kind = kindOfParam(op.path, name);
    if (!kind || kind === 'none') continue;
    allParams[name] = primary[kind];
    sent.push(primary[kind]);
  }
  for (const [name, kinds] of Object.entries(ID_FIELDS)) {
    if (name === 'org_id' || (!bodyFields.includes(name) && !queryFields.includes(name))) continue;
    const id = primary[name === 'listener_id' ? 'wh' : kinds[0]];
    if (bodyFields.includes(name)) allBody[name] = id;
    else allQuery[name] = id;
    sent.push(id);
  }
  if (sent.length) hostile.push(probe('(all the victim\'s)', allParams, allQuery, allBody, sent));
  out.push(...hostile);
  // The same again inside the attacker's own org: membership of some org opens nothing else.
  if (attacker.org) {
    for (const h of hostile) if (!h.label.includes('org_id=')) out.push({ ...h, label: `${h.label} org_id=${attacker.org}`, query: { ...h.query, org_id: attacker.org } });
  }
  return out;
}
