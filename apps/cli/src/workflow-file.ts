import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { load } from 'js-yaml';
import { readWorkflowDefinition, secretNamesOf, WorkflowDefinitionError } from '@app/component-model';
import { data } from './answer-shape';
import { bundleComponent } from './bundle';
import { CommandContext } from './command';
import { CliError, isNotFound } from './errors';
import { isNpmAction, npmActionFile } from './npm-action';
import { fields, green, note, out, printJson, printJsonLine, withSpinner } from './output';
import { endpointUrl, SOURCE } from './sources';
import { findWorkflow, triggerText, Workflow, WORKFLOW } from './workflows';

/** A deploy argument that is a workflow file: `.yaml`/`.yml`, or `.json` holding `trigger` and `steps`. */
export function isWorkflowFile(ref: string): boolean {
  if (!existsSync(ref)) return false;
  if (/\.ya?ml$/i.test(ref)) return true;
  if (!/\.json$/i.test(ref)) return false;
  try {
    const v = JSON.parse(readFileSync(ref, 'utf8')) as Record<string, unknown>;
    return !!v && typeof v === 'object' && 'trigger' in v && 'steps' in v;
  } catch {
    return false;
  }
}

/**
 * A `.json` deploy argument that is not a workflow definition is refused here: bundled as a
 * component it would fail with an esbuild error that says nothing about what was wrong.
 */
export function assertNotOtherJson(ref: string): void {
  if (!/\.json$/i.test(ref) || !existsSync(ref) || isWorkflowFile(ref)) return;
  let parsed = true;
  try {
    JSON.parse(readFileSync(ref, 'utf8'));
  } catch {
    parsed = false;
  }
  throw new CliError(`${ref} is not a workflow definition${parsed ? '' : ' (not valid JSON)'}: a workflow file needs \`trigger\` and \`steps\` (docs/workflows.md); sources are deployed from .js/.mjs files`);
}

export interface WorkflowFile {
  name: string;
  /** The API body: code steps carry their bundled code. */
  body: Record<string, unknown>;
  /** Every local file it was built from (the workflow file and each step's module graph), for `pd dev`. */
  inputs: string[];
}

/**
 * Reads a workflow file, bundles each code step's file (relative to the workflow
 * file; an `action:` naming a local file is bundled too) and takes each
 * `{{secrets.NAME}}` from the environment (`PD_SECRET_NAME`, else `NAME`).
 */
export async function readWorkflowFile(file: string): Promise<WorkflowFile> {
  const text = readFileSync(file, 'utf8');
  const json = /\.json$/i.test(file);
  let raw: unknown;
  try {
    raw = json ? JSON.parse(text) : load(text);
  } catch (e) {
    throw new CliError(`${file}: not valid ${json ? 'JSON' : 'YAML'}: ${(e as Error).message.split('\n')[0]}`);
  }
  const base = dirname(resolve(file));
  const inputs = [resolve(file)];
  raw = await inlineTriggerSource(raw, base, file, inputs);
  let def;
  try {
    def = readWorkflowDefinition(raw);
  } catch (e) {
    if (e instanceof WorkflowDefinitionError) throw new CliError(`${file}: ${e.message}`);
    throw e;
  }
  const steps = [];
  for (const [i, step] of def.steps.entries()) {
    if (step.action && isNpmAction(step.action)) {
      const bundle = await bundleComponent(await npmActionFile(step.action));
      steps.push({ name: step.name, props: step.props, code: bundle.code });
      continue;
    }
    const local = step.code ?? (step.action && /\.(m|c)?[jt]s$/i.test(step.action) ? step.action : undefined);
    if (local === undefined) {
      steps.push(step);
      continue;
    }
    const path = resolve(base, local);
    if (!existsSync(path)) throw new CliError(`${file}: steps[${i}].${step.code !== undefined ? 'code' : 'action'}: file not found: ${local}`);
    const bundle = await bundleComponent(path);
    inputs.push(...bundle.inputs);
    steps.push({ name: step.name, props: step.props, code: bundle.code });
  }
  const secrets: Record<string, string> = {};
  for (const name of secretNamesOf(def)) {
    const value = process.env[`PD_SECRET_${name}`] ?? process.env[name];
    if (value !== undefined) secrets[name] = value;
  }
  const body = { name: def.name, trigger: def.trigger, steps, settings: def.settings, ...(Object.keys(secrets).length ? { secrets } : {}) };
  return { name: def.name, body, inputs: [...new Set(inputs)] };
}

/** Creates the workflow, or deploys the one of that name again (a new `d_…`). */
export async function deployWorkflowBody(ctx: CommandContext, wf: WorkflowFile, orgId?: string): Promise<{ workflow: Workflow; created: boolean }> {
  const client = ctx.client;
  client.requireKey();
  const existing = await findWorkflow(client, wf.name, orgId);
  const res = existing
    ? await client.read('PUT', `/workflows/${encodeURIComponent(existing.id)}`, data(WORKFLOW), { body: wf.body })
    : await client.read('POST', '/workflows', data(WORKFLOW), { query: orgId ? { org_id: orgId } : {}, body: wf.body });
  return { workflow: res.data, created: !existing };
}

/**
 * Where requests that run the workflow go: its HTTP trigger's endpoint, or that of the source it is triggered by
 * (an inline `trigger.source` with `$.interface.http` is deployed with the workflow: the workflow object has no URL).
 */
async function triggerEndpoint(ctx: CommandContext, w: Workflow): Promise<string | undefined> {
  if (w.trigger.endpoint_url) return w.trigger.endpoint_url;
  const source = (w.trigger as { source?: unknown }).source;
  if (typeof source !== 'string' || !source.startsWith('dc_')) return undefined;
  const res = await ctx.client.get(`/sources/${encodeURIComponent(source)}`, data(SOURCE)).catch((e: unknown) => {
    if (isNotFound(e)) return undefined; // deleted meanwhile: the deploy itself succeeded
    throw e;
  });
  return res && endpointUrl(res.data);
}

/** `toStderr`: for `pd dev`, whose stdout is the stream (with `--json`, the workflow is its first line). */
export async function printWorkflow(ctx: CommandContext, w: Workflow, title: string, toStderr = false): Promise<void> {
  if (ctx.json) return (toStderr ? printJsonLine : printJson)(w);
  const endpoint = await triggerEndpoint(ctx, w);
  const write = toStderr ? note : out;
  write(green(title));
  write(fields([
    ['id', w.id],
    ['name', w.name],
    ['deployment', w.deployment_id],
    ['trigger', triggerText(w)],
    ['endpoint', endpoint],
    ['sse', `${ctx.client.origin}/sse/p/${w.id}/emits`],
    ['steps', w.steps.map((s) => s.name).join(' → ')],
  ]));
}

export async function deployWorkflowFile(ctx: CommandContext, file: string, orgId?: string): Promise<void> {
  const wf = await withSpinner(`Reading ${file}`, () => readWorkflowFile(file));
  const { workflow, created } = await withSpinner(`Deploying ${wf.name}`, () => deployWorkflowBody(ctx, wf, orgId));
  await printWorkflow(ctx, workflow, created ? 'Created workflow' : 'Deployed workflow');
}

/**
 * `trigger.source: { component: ./file.mjs | <key> | sc_…, props }` (a source deployed with the workflow):
 * a local file is bundled and sent as `code`, an `sc_…` id as `component_id`, anything else as a `key`.
 */
async function inlineTriggerSource(raw: unknown, base: string, file: string, inputs: string[]): Promise<unknown> {
  const trigger = (raw as { trigger?: { source?: unknown } } | null)?.trigger;
  const source = trigger?.source as Record<string, unknown> | undefined;
  if (!source || typeof source !== 'object' || Array.isArray(source) || !('component' in source)) return raw;
  const { component, ...rest } = source;
  if (typeof component !== 'string' || !component) throw new CliError(`${file}: trigger.source.component: must be a file, a component key or an sc_… id`);
  const path = resolve(base, component);
  let ref: Record<string, string>;
  if (/\.(m|c)?[jt]s$/i.test(component) || existsSync(path)) {
    if (!existsSync(path)) throw new CliError(`${file}: trigger.source.component: file not found: ${component}`);
    const bundle = await bundleComponent(path);
    inputs.push(...bundle.inputs);
    ref = { code: bundle.code };
  } else ref = component.startsWith('sc_') ? { component_id: component } : { key: component };
  return { ...(raw as object), trigger: { ...trigger, source: { ...ref, ...rest } } };
}
