import { existsSync, readFileSync } from 'node:fs';
import { ApiClient, MAX_RESPONSE_BYTES, readUpTo } from './api-client';
import { bundleComponent, Bundle } from './bundle';
import { CommandContext } from './command';
import { CliError, isNotFound } from './errors';
import { bold, fields, green, oneLine, out, printJson, printJsonLine, withSpinner } from './output';
import { coerceToDescriptors, completeProps, parsePropFlags, PropValues, readPropsFile } from './props';
import { data } from './answer-shape';
import { Component, COMPONENT, endpointUrl, Source, SOURCE, sseUrl } from './sources';

export type TargetKind = 'file' | 'url' | 'key';

/**
 * A deploy argument is a URL, a local file, or else a component key (yours, else the registry's) or `sc_…` id.
 * A path, or a name ending as a component or workflow file does (`.mjs`, `.yaml`, `.json`), is a missing file.
 */
export function classifyTarget(ref: string): TargetKind {
  if (/^https?:\/\//i.test(ref)) return 'url';
  if (existsSync(ref)) return 'file';
  if (/[\\/]/.test(ref) || /\.((m|c)?[jt]s|ya?ml|json)$/i.test(ref)) throw new CliError(`file not found: ${ref}`);
  return 'key';
}

export interface PropInput {
  flags: string[];
  file?: string;
}

/** Values from `--props file.json` overlaid with `--prop name=value` flags. */
export function givenProps(input: PropInput): { values: PropValues; raw: Record<string, string> } {
  const fromFile = input.file ? readPropsFile(input.file) : {};
  const flags = parsePropFlags(input.flags);
  return { values: { ...fromFile, ...flags.values }, raw: flags.raw };
}

export function orgQuery(orgId: string | undefined): { org_id?: string } {
  return orgId ? { org_id: orgId } : {};
}

/** True when component code declares `type: "action"` (read statically, as `pd publish` does: nothing is saved to find out). */
export function looksLikeAction(code: string): boolean {
  return /\btype\s*:\s*(["'`])action\1/.test(code);
}

/** True when code may set a `type` that only the server, running it, knows (`type: kind`): the text cannot tell. */
export function mayComputeType(code: string): boolean {
  return /\btype\s*:\s*[^\s"'`]/.test(code);
}

/** `pd publish` takes a local file: a URL or the key of a saved action is not something to give it. */
const actionRefusal = (ref: string): CliError =>
  new CliError(`${ref} is an action, not a source: ${classifyTarget(ref) === 'file' ? `save it with \`pd publish ${ref}\`` : 'only sources are deployed (`pd publish <file>` saves an action from a local file)'}`);

/** Bundles a local file and saves it as a component; with `sourceOnly`, an action is refused before anything is saved. */
export async function saveLocalComponent(client: ApiClient, file: string, orgId?: string, sourceOnly = false): Promise<{ component: Component; bundle: Bundle }> {
  const bundle = await withSpinner(`Bundling ${file}`, () => bundleComponent(file), `Bundled ${file}`);
  // The entry's own text: a source may bundle modules that mention actions.
  if (sourceOnly && looksLikeAction(readFileSync(bundle.inputs[0] ?? file, 'utf8'))) throw actionRefusal(file);
  const res = await withSpinner('Saving the component (installing its npm imports on first use)', () =>
    client.read('POST', '/components', data(COMPONENT), { query: orgQuery(orgId), body: { component_code: bundle.code } }),
  'Saved the component');
  return { component: res.data, bundle };
}

/** The text at a component URL, to look at before the api saves it (undefined when it cannot be read here: the api reports that). */
async function peekUrl(url: string): Promise<string | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) return undefined;
    const { text, whole } = await readUpTo(res, MAX_RESPONSE_BYTES);
    return whole ? text : undefined;
  } catch {
    return undefined;
  }
}

/** Saves or fetches the component a deploy argument names. With `sourceOnly` (deploy), an action is refused before anything is saved. */
export async function componentFor(client: ApiClient, ref: string, orgId?: string, sourceOnly = false): Promise<{ component: Component; kind: TargetKind; bundle?: Bundle }> {
  const kind = classifyTarget(ref);
  if (kind === 'file') return { kind, ...(await saveLocalComponent(client, ref, orgId, sourceOnly)) };
  if (kind === 'url') {
    if (sourceOnly) {
      const code = await withSpinner(`Reading ${ref}`, () => peekUrl(ref));
      if (code !== undefined && looksLikeAction(code)) throw actionRefusal(ref);
    }
    const res = await withSpinner(`Fetching ${ref}`, () => client.read('POST', '/components', data(COMPONENT), { query: orgQuery(orgId), body: { component_url: ref } }));
    return { kind, component: res.data };
  }
  return { kind, component: await withSpinner(`Looking up ${ref}`, () => componentByKey(client, ref, orgId)) };
}

/**
 * A key names a component as `POST /sources` with `key` does: the newest one of yours with that key (the org's with
 * an org), else the registry's; an `sc_…` id names a saved component you can reach.
 */
async function componentByKey(client: ApiClient, ref: string, orgId?: string): Promise<Component> {
  const path = encodeURIComponent(ref);
  const own = await client.get(`/components/${path}`, data(COMPONENT), orgQuery(orgId)).catch((e: unknown) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
  if (own) return own.data;
  const res = await client.get(`/components/registry/${path}`, data(COMPONENT)).catch((e: unknown) => {
    if (isNotFound(e)) throw new CliError(`"${ref}" is neither a local file, a URL nor a registry component key`);
    throw e;
  });
  return res.data;
}

export interface DeployOptions {
  name?: string;
  orgId?: string;
  props: PropInput;
}

export interface Deployed {
  source: Source;
  component: Component;
  bundle?: Bundle;
  /** The props sent on create (kept by `pd dev` for updates). */
  props: PropValues;
}

/** `pd deploy` and the first step of `pd dev`: component, props, then `POST /sources`. */
export async function deploy(ctx: CommandContext, ref: string, opts: DeployOptions): Promise<Deployed> {
  const client = ctx.client;
  client.requireKey();
  const { component, kind, bundle } = await componentFor(client, ref, opts.orgId, true);
  // Code that hides its type from the static check (a registry component, a computed type) is caught here, before any source exists.
  if (component.type === 'action') throw actionRefusal(ref);
  const given = givenProps(opts.props);
  const descriptors = component.configurable_props ?? [];
  const props = await completeProps(descriptors, coerceToDescriptors(given.values, descriptors, given.raw), ctx.interactive);
  const body: Record<string, unknown> = { component_id: component.id, configured_props: props };
  if (kind === 'url') body.component_url = ref;
  if (opts.name) body.name = opts.name;
  const res = await withSpinner('Deploying the source', () => client.read('POST', '/sources', data(SOURCE), { query: orgQuery(opts.orgId), body }), 'Deployed');
  return { source: res.data, component, bundle, props };
}

/** What `deploy`, `dev` and `update` print about a source. */
export function describeSource(client: ApiClient, source: Source, component?: Component): Record<string, unknown> {
  return {
    ...source,
    endpoint_url: endpointUrl(source) ?? null,
    sse_url: sseUrl(client, source.id),
    ...(component ? { component: { id: component.id, key: component.key, name: component.name, version: component.version } } : {}),
  };
}

/** `jsonLine`: for streams (`pd dev --json`), where every document is one line. */
export function printSource(ctx: CommandContext, source: Source, component: Component | undefined, heading: string, jsonLine = false): void {
  if (ctx.json) return (jsonLine ? printJsonLine : printJson)(describeSource(ctx.client, source, component));
  out(`${green('✔')} ${bold(heading)} ${oneLine(source.id)}`);
  out(fields([
    ['id', source.id],
    ['name', source.name],
    ['component', component ? `${component.id} (${component.name}${component.version ? ` v${component.version}` : ''})` : source.component_id],
    ['active', String(source.active)],
    ['endpoint', endpointUrl(source)],
    ['events (SSE)', sseUrl(ctx.client, source.id)],
  ]));
}
