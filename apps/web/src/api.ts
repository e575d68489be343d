import { session } from './session';
import type { Component, ConfigurableProp, Me, Org, Page, Usage, Source, Subscription, Webhook, WebhookDelivery, EventSummary, PropOption, Workflow, WorkflowRun } from './types';

/** An error answered by the API: `{ error, code, details? }` (docs/api.md#conventions). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
  /** The prop or field the API names, when it names one. */
  get field(): string | undefined {
    const d = this.details ?? {};
    const name = d.prop ?? d.field;
    return typeof name === 'string' ? name : undefined;
  }
}

type Query = Record<string, string | number | undefined>;

/** Listeners told when the API answers 401: the key is no longer valid, so the app signs out. */
const unauthorized = new Set<() => void>();
export const onUnauthorized = (f: () => void): (() => void) => {
  unauthorized.add(f);
  return () => unauthorized.delete(f);
};
/** Tells the listeners the key was refused (a request, or an event stream, answered 401). */
export const keyRefused = (): void => unauthorized.forEach((f) => f());

function url(path: string, query: Query = {}, withOrg = true): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const org = session.org();
  if (withOrg && org) params.set('org_id', org);
  const qs = params.toString();
  return `/v1${path}${qs ? `?${qs}` : ''}`;
}

async function call<T>(method: string, path: string, { query, body, withOrg = true, key }: { query?: Query; body?: unknown; withOrg?: boolean; key?: string } = {}): Promise<T> {
  const res = await fetch(url(path, query, withOrg), {
    method,
    headers: {
      authorization: `Bearer ${key ?? session.key() ?? ''}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = (json ?? {}) as { error?: string; code?: string; details?: Record<string, unknown> };
    if (res.status === 401 && !key) keyRefused();
    throw new ApiError(res.status, e.code ?? 'http_error', e.error ?? `HTTP ${res.status}`, e.details);
  }
  return json as T;
}

const enc = encodeURIComponent;
/** The org whose resources the pages show (`org_id`), or the user's own. */
const owner = (): string => {
  const org = session.org();
  return org ? `/orgs/${enc(org)}` : '/users/me';
};

export const api = {
  /** Checks a key before keeping it. */
  me: async (key?: string): Promise<Me> => {
    const me = (await call<{ data: Me }>('GET', '/users/me', { withOrg: false, key })).data;
    // The paid form of the user has no `orgs` (as the spec gives it): the workspaces route lists them on either plan.
    if (!me.orgs) me.orgs = (await call<{ data: Org[] }>('GET', '/users/me/workspaces', { withOrg: false, key })).data;
    return me;
  },

  /** Invocations and compute time per UTC day of the workspace (you or the chosen org). */
  usage: (days: number) => call<{ data: Usage }>('GET', `${owner()}/usage`, { query: { days }, withOrg: false }).then((r) => r.data),

  sources: (query: Query) => call<Page<Source>>('GET', `${owner()}/sources`, { query, withOrg: false }),
  source: (id: string) => call<{ data: Source }>('GET', `/sources/${enc(id)}`).then((r) => r.data),
  createSource: (body: Record<string, unknown>) => call<{ data: Source }>('POST', '/sources', { body }).then((r) => r.data),
  updateSource: (id: string, body: Record<string, unknown>) => call<{ data: Source }>('PUT', `/sources/${enc(id)}`, { body }).then((r) => r.data),
  deleteSource: (id: string) => call<void>('DELETE', `/sources/${enc(id)}`),
  runSource: (id: string, event?: unknown) => call<{ data: { invocation_id: string } }>('POST', `/sources/${enc(id)}/run`, { body: event === undefined ? {} : { event } }).then((r) => r.data),
  events: (id: string, query: Query) => call<Page<EventSummary>>('GET', `/sources/${enc(id)}/event_summaries`, { query }),
  deleteEvents: (id: string) => call<void>('DELETE', `/sources/${enc(id)}/events`),

  workflows: (query: Query) => call<Page<Workflow>>('GET', `${owner()}/workflows`, { query, withOrg: false }),
  workflow: (id: string) => call<{ data: Workflow }>('GET', `/workflows/${enc(id)}`).then((r) => r.data),
  runWorkflow: (id: string, event?: unknown) => call<{ data: { invocation_id: string } }>('POST', `/workflows/${enc(id)}/run`, { body: event === undefined ? {} : { event } }).then((r) => r.data),
  replayWorkflow: (id: string, eventId: string) => call<{ data: { invocation_id: string } }>('POST', `/workflows/${enc(id)}/replay`, { body: { event_id: eventId } }).then((r) => r.data),
  workflowRuns: (id: string, limit = 10) => call<{ data: WorkflowRun[] }>('GET', `/workflows/${enc(id)}/runs`, { query: { limit } }).then((r) => r.data),
  /** `$.send.emit` events; `event_name` `$logs` reads the run records and log lines. */
  workflowEvents: (id: string, query: Query) => call<Page<EventSummary>>('GET', `/workflows/${enc(id)}/event_summaries`, { query }),
  workflowErrors: (id: string, query: Query) => call<Page<EventSummary>>('GET', `/workflows/${enc(id)}/$errors/event_summaries`, { query }),

  saveComponent: (code: string) => call<{ data: Component }>('POST', '/components', { body: { component_code: code } }).then((r) => r.data),
  component: (keyOrId: string, include?: string) => call<{ data: Component }>('GET', `/components/${enc(keyOrId)}`, { query: { include } }).then((r) => r.data),
  registryComponent: (key: string) => call<{ data: Component }>('GET', `/components/registry/${enc(key)}`).then((r) => r.data),
  propOptions: (component: string, prop: string, body: { page: number; prevContext?: unknown; configured_props?: Record<string, unknown>; source_id?: string }) =>
    call<{ data: { options: PropOption[]; context: unknown } }>('POST', `/components/${enc(component)}/props/${enc(prop)}/options`, { body }).then((r) => r.data),

  /**
   * The props for the values given so far: the component's own, then those its additionalProps() adds
   * (with `sourceId`, starting from the props it added for that source, as an update does).
   */
  reloadProps: (component: string, configured_props: Record<string, unknown>, sourceId?: string) =>
    call<{ data: { configurable_props: ConfigurableProp[] } }>('POST', `/components/${enc(component)}/props/reload`, { body: { configured_props, ...(sourceId ? { source_id: sourceId } : {}) } }).then(
      (r) => r.data.configurable_props,
    ),

  webhooks: (query: Query) => call<Page<Webhook>>('GET', `${owner()}/webhooks`, { query, withOrg: false }),
  createWebhook: (body: { url: string; name?: string; description?: string }) => call<{ data: Webhook }>('POST', '/webhooks', { body }).then((r) => r.data),
  deleteWebhook: (id: string) => call<void>('DELETE', `/webhooks/${enc(id)}`),
  deliveries: (id: string, query: Query) => call<Page<WebhookDelivery>>('GET', `/webhooks/${enc(id)}/deliveries`, { query }),

  subscriptions: () => call<{ data: Subscription[] }>('GET', `${owner()}/subscriptions`, { withOrg: false }).then((r) => r.data),
  subscribe: (body: { emitter_id: string; listener_id: string; event_name: string }) => call<{ data: Subscription }>('POST', '/subscriptions', { body }).then((r) => r.data),
  unsubscribe: (body: { emitter_id: string; listener_id: string; event_name: string }) => call<void>('DELETE', '/subscriptions', { body }),
};
