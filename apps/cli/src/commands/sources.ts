import { bundleComponent } from '../bundle';
import { Command, list, orgOf, str, textOption, usageError } from '../command';
import { deploy, givenProps, looksLikeAction, mayComputeType, orgQuery, printSource, saveLocalComponent } from '../deploy';
import { assertPropFlags } from '../props';
import { ApiResponseError, CliError } from '../errors';
import { bold, dim, fields, green, oneLine, out, printJson, table, withSpinner } from '../output';
import { data, obj, str as string } from '../answer-shape';
import { Component, COMPONENT, endpointUrl, listSources, onSource, propsAsInput, resolveSource, Source, SOURCE } from '../sources';
import { assertNotOtherJson, deployWorkflowFile, isWorkflowFile } from '../workflow-file';
import { basePath, listWorkflows, resolveTarget, triggerText } from '../workflows';

const PROP_HELP = [
  '--prop <name=value>    a prop value (repeatable); JSON values are parsed: --prop count=5 --prop tags=\'["a"]\'',
  '--props <file.json>    prop values from a JSON object (--prop wins)',
];
const PROP_OPTIONS = { prop: { type: 'string', multiple: true }, props: { type: 'string' } } as const;

export const deployCommand: Command = {
  name: 'deploy',
  summary: 'deploy a source from a local file, a component key (yours or the registry\'s) or a URL',
  usage: 'pd deploy <file | component key | url> [--prop name=value]... [--props file.json] [--name <name>] [--org <o_…>]',
  help: [
    ...PROP_HELP,
    '--name <name>          name of the source (default: the component name, made unique)',
    '--org <o_…>            deploy inside an org; a workflow file creates or redeploys that org\'s workflow of its name (default: the profile\'s org_id)',
    'Required props without a value are prompted for on a terminal; without one, it is an error.',
  ],
  examples: ['pd deploy workflow.yaml   (a workflow file: creates it, or deploys the workflow of that name again; docs/workflows.md)', 'pd deploy sources/new-item/new-item.mjs --prop url=https://example.com/feed.xml', 'pd deploy http-custom-response --name my-hook', 'pd deploy https://example.com/components/source.js --json'],
  options: { ...PROP_OPTIONS, name: { type: 'string' }, org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const ref = positionals[0];
    if (!ref) throw usageError('deploy', 'pd deploy needs a file, component key or URL');
    assertPropFlags('deploy', list(values, 'prop'));
    const name = textOption('deploy', values, 'name', 'a name');
    const propsFile = textOption('deploy', values, 'props', 'a JSON file');
    if (isWorkflowFile(ref)) return deployWorkflowFile(ctx, ref, orgOf(ctx, values));
    assertNotOtherJson(ref);
    const { source, component } = await deploy(ctx, ref, { name, orgId: orgOf(ctx, values), props: { flags: list(values, 'prop'), file: propsFile } });
    printSource(ctx, source, component, 'Deployed source');
  },
};

export const publishCommand: Command = {
  name: 'publish',
  summary: 'save an action component (type: "action")',
  usage: 'pd publish <file> [--org <o_…>]',
  help: ['--org <o_…>            save it inside an org'],
  examples: ['pd publish actions/send-message/send-message.mjs'],
  options: { org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const file = positionals[0];
    if (!file) throw usageError('publish', 'pd publish needs the file of an action component');
    ctx.client.requireKey();
    const bundle = await bundleComponent(file);
    // A computed type is read by the server once saved (as pd deploy does, which then points here).
    if (!looksLikeAction(bundle.code) && !mayComputeType(bundle.code)) {
      throw new CliError(`${file} is not an action (its component has no type: "action"); deploy sources with \`pd deploy ${file}\``);
    }
    const res = await withSpinner('Publishing the action', () =>
      ctx.client.read('POST', '/components', data(COMPONENT), { query: orgQuery(orgOf(ctx, values)), body: { component_code: bundle.code } }),
    'Published');
    const c = res.data;
    if (c.type && c.type !== 'action') throw new CliError(`${file} was read as a ${c.type}, not an action: deploy sources with \`pd deploy ${file}\``);
    if (ctx.json) return printJson(c);
    out(`${green('✔')} ${bold('Published action')} ${oneLine(c.id)}`);
    out(fields([['id', c.id], ['key', c.key], ['name', c.name], ['version', c.version], ['props', (c.configurable_props ?? []).map((p) => p.name).join(', ')]]));
  },
};

/** What `pd list streams` shows of a source: Pipedream's columns (its streams are private: they need your API key). */
function streamOf(source: Source, origin: string): { id: string; name: string; type: string; visibility: 'private'; sse: string } {
  const values = Object.values(source.configured_props ?? {});
  const isTimer = values.some((v) => v !== null && typeof v === 'object' && 'interval_seconds' in v);
  const type = endpointUrl(source) ? 'http' : isTimer ? 'timer' : 'source';
  return { id: source.id, name: source.name, type, visibility: 'private', sse: `${origin}/sse/dc/${source.id}/emits` };
}

export const listCommand: Command = {
  name: 'list',
  summary: 'list your sources, their event streams, or your workflows',
  usage: 'pd list sources|streams|workflows [--org <o_…>]',
  help: ['--org <o_…>            list the sources (streams, workflows) of an org', 'sources and streams have the short forms so and st'],
  examples: ['pd list sources', 'pd list streams', 'pd list workflows', 'pd list sources --json | jq -r ".[].id"'],
  options: { org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const what = positionals[0];
    if (what && ['streams', 'stream', 'st'].includes(what)) {
      const streams = (await withSpinner('Listing streams', () => listSources(ctx.client, orgOf(ctx, values)))).map((s) => streamOf(s, ctx.client.origin));
      if (ctx.json) return printJson(streams);
      if (streams.length === 0) return out(dim('No sources yet: deploy one with `pd deploy <file>`'));
      return out(table(['NAME', 'TYPE', 'VISIBILITY', 'SSE'], streams.map((s) => [s.name, s.type, s.visibility, s.sse])));
    }
    if (what && ['workflows', 'workflow', 'wf'].includes(what)) {
      const workflows = await withSpinner('Listing workflows', () => listWorkflows(ctx.client, orgOf(ctx, values)));
      if (ctx.json) return printJson(workflows);
      if (workflows.length === 0) return out(dim('No workflows yet: deploy one with `pd deploy workflow.yaml`'));
      // A workflow triggered by a source (its own inline one included) is reached at that source's endpoint; its sources are the owner's.
      const sourceOf = (w: (typeof workflows)[number]): unknown => (w.trigger as { source?: unknown }).source;
      const sources = workflows.some((w) => typeof sourceOf(w) === 'string') ? await listSources(ctx.client, orgOf(ctx, values)) : [];
      const endpointOf = new Map(sources.map((s) => [s.id, endpointUrl(s)]));
      return out(table(['ID', 'NAME', 'TRIGGER', 'STEPS', 'ACTIVE', 'ENDPOINT'], workflows.map((w) => [w.id, w.name, triggerText(w), String(w.steps.length), w.active ? 'true' : 'false', w.trigger.endpoint_url ?? endpointOf.get(String(sourceOf(w))) ?? ''])));
    }
    if (!what || !['sources', 'source', 'src', 'so'].includes(what)) {
      throw new CliError(`pd list needs what to list: pd list sources, pd list streams or pd list workflows${what ? ` (not "${what}")` : ''}`, 2);
    }
    const sources = await withSpinner('Listing sources', () => listSources(ctx.client, orgOf(ctx, values)));
    if (ctx.json) return printJson(sources);
    if (sources.length === 0) return out(dim('No sources yet: deploy one with `pd deploy <file>`'));
    out(table(['ID', 'NAME', 'COMPONENT', 'ACTIVE', 'ENDPOINT'], sources.map((s) => [s.id, s.name, s.component_id, s.active ? 'true' : 'false', endpointUrl(s) ?? ''])));
  },
};

function parseActive(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (/^(true|yes|1|on)$/i.test(v)) return true;
  if (/^(false|no|0|off)$/i.test(v)) return false;
  throw usageError('update', `--active expects true or false, got "${v}"`);
}

export const updateCommand: Command = {
  name: 'update',
  summary: 'update a source\'s code, props, name or active state',
  usage: 'pd update <name or id> [--file <file>] [--prop name=value]... [--props file.json] [--active true|false] [--name <name>]',
  help: [
    '--file <file>          new code (bundled like pd deploy); the id and endpoint stay the same',
    ...PROP_HELP,
    '--active true|false    enable or disable the source',
    '--name <name>          rename it',
    '--org <o_…>            look the source up among an org\'s sources first (default: the profile\'s org_id)',
  ],
  examples: ['pd update my-source --file source.mjs', 'pd update dc_abc --active false', 'pd update my-source --prop url=https://example.com/other.xml'],
  options: { ...PROP_OPTIONS, file: { type: 'string' }, active: { type: 'string' }, name: { type: 'string' }, org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const ref = positionals[0];
    if (!ref) throw usageError('update', 'pd update needs the name or id of a source');
    // A PUT that changes nothing would still run the source's deactivate and activate hooks.
    if (!['file', 'prop', 'props', 'active', 'name'].some((o) => values[o] !== undefined)) {
      throw usageError('update', `pd update ${ref} needs what to change: --file, --prop, --props, --active or --name`);
    }
    assertPropFlags('update', list(values, 'prop'));
    const active = parseActive(str(values, 'active'));
    const name = textOption('update', values, 'name', 'a name');
    const file = textOption('update', values, 'file', 'a component file');
    const propsFile = textOption('update', values, 'props', 'a JSON file');
    const source = await resolveSource(ctx.client, ref, orgOf(ctx, values));
    const body: Record<string, unknown> = {};
    let component: Component | undefined;
    if (file) {
      component = (await saveLocalComponent(ctx.client, file, orgOf(ctx, values), true)).component;
      if (component.type === 'action') throw new CliError(`${file} is an action, not a source`);
      body.component_id = component.id;
    } else body.component_id = source.component_id; // the API requires a component on every update
    // PUT replaces the props when given: keep the current ones and overlay the new values.
    const props = givenProps({ flags: list(values, 'prop'), file: propsFile });
    if (Object.keys(props.values).length > 0) body.configured_props = { ...propsAsInput(source.configured_props), ...props.values };
    // The API's `active` defaults to true: send the current state so an update never re-enables by surprise.
    body.active = active ?? source.active;
    if (name !== undefined) body.name = name;
    const res = await withSpinner(`Updating ${source.id}`, () => onSource(ref, () => ctx.client.read('PUT', `/sources/${encodeURIComponent(source.id)}`, data(SOURCE), { body })), 'Updated');
    printSource(ctx, res.data, component, 'Updated source');
  },
};

export const deleteCommand: Command = {
  name: 'delete',
  summary: 'delete a source (its deactivate hook runs first) or a workflow',
  usage: 'pd delete <name or id>',
  help: ['--org <o_…>            look a source up among an org\'s sources first, a workflow in that org only (default: the profile\'s org_id)'],
  examples: ['pd delete my-source', 'pd delete dc_abc --json', 'pd delete my-workflow'],
  options: { org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const ref = positionals[0];
    if (!ref) throw usageError('delete', 'pd delete needs the name or id of a source or workflow');
    const target = await resolveTarget(ctx.client, ref, orgOf(ctx, values));
    if (target.kind === 'workflow') {
      await withSpinner(`Deleting ${target.id}`, () => ctx.client.request('DELETE', `/workflows/${encodeURIComponent(target.id)}`), 'Deleted');
      if (ctx.json) return printJson({ id: target.id, name: target.name, deleted: true });
      return out(`${green('✔')} Deleted workflow ${oneLine(target.id)} (${oneLine(target.name)})`);
    }
    const source = await resolveSource(ctx.client, target.id, orgOf(ctx, values));
    await withSpinner(`Deleting ${source.id}`, () => onSource(ref, () => ctx.client.request('DELETE', `/sources/${encodeURIComponent(source.id)}`)), 'Deleted');
    if (ctx.json) return printJson({ id: source.id, name: source.name, deleted: true });
    out(`${green('✔')} Deleted source ${oneLine(source.id)} (${oneLine(source.name)})`);
  },
};

export const runCommand: Command = {
  name: 'run',
  summary: 'run a source or workflow now (a manual invocation, like a timer firing)',
  usage: 'pd run <name or id> [--event <json>]',
  help: [
    '--event <json>         the event passed to run() (default: a timer source its timer event, else { timestamp, manual: true })',
    '--org <o_…>            look a source up among an org\'s sources first, a workflow in that org only (default: the profile\'s org_id)',
    'The run is queued (HTTP 202); watch what it emits with pd events -f or pd logs.',
  ],
  examples: ['pd run my-poller', 'pd run my-hook --event \'{"body":{"hello":"world"}}\''],
  options: { event: { type: 'string' }, org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const ref = positionals[0];
    if (!ref) throw usageError('run', 'pd run needs the name or id of a source or workflow');
    // An --event that is no JSON is a usage mistake, found before any request.
    const eventText = str(values, 'event');
    let body: { event: unknown } | undefined;
    if (eventText !== undefined) {
      try {
        body = { event: JSON.parse(eventText) as unknown };
      } catch (e) {
        throw usageError('run', `--event expects JSON, got ${JSON.stringify(eventText)} (${(e as Error).message})`);
      }
    }
    const target = await resolveTarget(ctx.client, ref, orgOf(ctx, values));
    const source = target.kind === 'source' ? await resolveSource(ctx.client, target.id, orgOf(ctx, values)) : { id: target.id, name: target.name };
    const res = await withSpinner(`Running ${source.id}`, () => onSource(ref, () => ctx.client.read('POST', `${basePath(source)}/run`, data(obj({ invocation_id: string })), { body })), 'Invoked').catch((e: unknown) => {
      // The API's answer names its REST call; pd names its own command.
      if (target.kind === 'source' && e instanceof ApiResponseError && e.code === 'conflict') {
        throw new CliError(`source ${source.id} (${source.name}) is not active: enable it with \`pd update ${source.id} --active true\` (HTTP 409)`);
      }
      throw e;
    });
    if (ctx.json) return printJson(res.data);
    const detail = Object.entries(res.data).filter(([, v]) => typeof v !== 'object').map(([k, v]) => `${k}=${String(v)}`).join(' ');
    out(`${green('✔')} Invoked ${oneLine(source.id)} (${oneLine(source.name)})${detail ? ` ${dim(oneLine(detail))}` : ''}`);
  },
};
