import { ApiClient } from './api-client';
import { arr, bool, data, num, obj, opt, ShapeOf, str } from './answer-shape';
import { CliError, isNotFound } from './errors';
import { resolveSource } from './sources';

/**
 * A workflow as the API's extension returns it: the fields `pd` reads. The trigger is the definition's
 * (`{ http }`, `{ timer }`, `{ events }`, …); an HTTP trigger adds `endpoint_url`.
 */
export const WORKFLOW = obj({
  id: str,
  name: str,
  active: bool,
  deployment_id: str,
  trigger: obj({ endpoint_url: opt(str), timer: opt(obj({ cron: opt(str), intervalSeconds: opt(num) })), events: opt(obj({ emitter_id: str, event_name: opt(str) })) }),
  steps: arr(obj({ name: str })),
});
export type Workflow = ShapeOf<typeof WORKFLOW>;

export const WORKFLOW_ID = /^p_[A-Za-z0-9_-]+$/;

export function listWorkflows(client: ApiClient, orgId?: string): Promise<Workflow[]> {
  return client.listAll(orgId ? `/orgs/${encodeURIComponent(orgId)}/workflows` : '/users/me/workflows', WORKFLOW);
}

/**
 * A workflow by id (`p_…`) or name (names are unique per owner). With an org, a name is looked up
 * in that org only: a personal workflow of the same name is never deployed, run or deleted instead.
 * Undefined when none has that name.
 */
export async function findWorkflow(client: ApiClient, ref: string, orgId?: string): Promise<Workflow | undefined> {
  if (WORKFLOW_ID.test(ref)) {
    try {
      return (await client.get(`/workflows/${encodeURIComponent(ref)}`, data(WORKFLOW))).data;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }
  return (await listWorkflows(client, orgId)).find((w) => w.name === ref);
}

export async function resolveWorkflow(client: ApiClient, ref: string, orgId?: string): Promise<Workflow> {
  const w = await findWorkflow(client, ref, orgId);
  if (!w) throw new CliError(`workflow "${ref}" not found: no workflow in ${orgId ? `org ${orgId}` : 'your account'} has that id or name (see \`pd list workflows\`)`);
  return w;
}

/** How a workflow is triggered, in a few words. */
export function triggerText(w: Workflow): string {
  const t = w.trigger;
  if ('http' in t) return 'http';
  if (t.timer) return t.timer.cron ? `cron ${t.timer.cron}` : `every ${t.timer.intervalSeconds}s`;
  if ('source' in t) return `source ${String(t.source)}`;
  if (t.events) return `events ${t.events.emitter_id}${t.events.event_name ? ` ${t.events.event_name}` : ''}`;
  return 'manual';
}

/** What `pd events`, `pd logs`, `pd delete` and `pd run` act on: a source (`dc_…`, name_slug, name) or a workflow (`p_…`, name). */
export interface Target {
  kind: 'source' | 'workflow';
  id: string;
  name: string;
}

export async function resolveTarget(client: ApiClient, ref: string, orgId?: string): Promise<Target> {
  if (WORKFLOW_ID.test(ref)) {
    const w = await resolveWorkflow(client, ref, orgId);
    return { kind: 'workflow', id: w.id, name: w.name };
  }
  try {
    const s = await resolveSource(client, ref, orgId);
    return { kind: 'source', id: s.id, name: s.name };
  } catch (e) {
    if (!(e instanceof CliError) || !/not found/.test(e.message) || ref.startsWith('dc_')) throw e;
    const w = await findWorkflow(client, ref, orgId);
    if (w) return { kind: 'workflow', id: w.id, name: w.name };
    // Ambiguous names and unreachable APIs come through unchanged; only "none has that name" is reworded.
    if (!/^source ".*" not found: no source in/.test(e.message)) throw e;
    const where = orgId ? `: not among the sources of org ${orgId} or your account, nor the workflows of org ${orgId}` : ' in your account';
    throw new CliError(`no source or workflow named "${ref}"${where} (see \`pd list sources\` and \`pd list workflows\`)`);
  }
}

/** `/sources/<id>` or `/workflows/<id>`. */
export function basePath(target: Pick<Target, 'id'>): string {
  return `${target.id.startsWith('p_') ? '/workflows' : '/sources'}/${encodeURIComponent(target.id)}`;
}
