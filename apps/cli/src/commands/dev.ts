import { createHash } from 'node:crypto';
import { basename, relative } from 'node:path';
import { ComponentWatcher } from '../file-watcher';
import { bundleComponent, Bundle } from '../bundle';
import { Command, CommandContext, list, orgOf, str, textOption, usageError } from '../command';
import { classifyTarget, deploy, givenProps, printSource } from '../deploy';
import { assertPropFlags } from '../props';
import { CliError, describeError } from '../errors';
import { follow, printEvent, printObservation, untilInterrupted } from '../live';
import { dim, green, note, oneLine, red } from '../output';
import { data } from '../answer-shape';
import { onSource, resolveSource, Source, SOURCE } from '../sources';
import { assertNotOtherJson, isWorkflowFile } from '../workflow-file';
import { devWorkflow } from './dev-workflow';

const hash = (code: string): string => createHash('sha256').update(code).digest('hex');

export const devCommand: Command = {
  name: 'dev',
  summary: 'deploy a local source or workflow file, redeploy it on every save, stream its events and logs',
  usage: 'pd dev <file> [--dc <id or name>] [--prop name=value]... [--props file.json] [--name <name>] [--org <o_…>]',
  help: [
    '--dc <id or name>      attach to an existing source instead of deploying a new one',
    '--prop, --props        prop values (as for pd deploy); with --dc they replace the source\'s props',
    '--name <name>          name of a newly deployed source',
    '--org <o_…>            deploy inside an org, or find the --dc source there first (default: the profile\'s org_id)',
    'Watches the file and every local file it imports; Ctrl-C stops (the source stays deployed).',
  ],
  examples: ['pd dev sources/my-source.mjs --prop url=https://example.com/feed.xml', 'pd dev sources/my-source.mjs --dc dc_abc'],
  options: { dc: { type: 'string' }, prop: { type: 'string', multiple: true }, props: { type: 'string' }, name: { type: 'string' }, org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const file = positionals[0];
    if (!file) throw usageError('dev', 'pd dev needs the file of a source component or workflow');
    if (isWorkflowFile(file)) return devWorkflow(ctx, file, orgOf(ctx, values));
    assertNotOtherJson(file);
    // Only a local file can be watched: a key or URL was deployed, then failed on the bundle it does not have.
    if (classifyTarget(file) !== 'file') throw new CliError(`file not found: ${file} (pd dev watches a local file; a component key or URL is deployed with \`pd deploy ${file}\`)`);
    assertPropFlags('dev', list(values, 'prop'));
    const name = textOption('dev', values, 'name', 'a name');
    const dc = textOption('dev', values, 'dc', 'the id or name of a source');
    const orgId = orgOf(ctx, values);
    const propInput = { flags: list(values, 'prop'), file: textOption('dev', values, 'props', 'a JSON file') };
    // Ctrl-C is handled from the start: one that comes while deploying (or just after the source is printed) stops cleanly too.
    let onStop = (): void => undefined;
    const ac = untilInterrupted(() => onStop());
    let source: Source;
    let bundle: Bundle;
    let props: Record<string, unknown> | undefined;
    if (dc !== undefined) {
      const existing = await resolveSource(ctx.client, dc, orgId);
      bundle = await bundleComponent(file);
      const given = givenProps(propInput).values;
      props = Object.keys(given).length > 0 ? given : undefined;
      source = await update(ctx, existing.id, bundle, props, dc);
      printSource(ctx, source, undefined, 'Attached to source', true);
    } else {
      const deployed = await deploy(ctx, file, { name, orgId, props: propInput });
      source = deployed.source;
      bundle = deployed.bundle as Bundle;
      props = undefined; // the server keeps the props given on deploy
      printSource(ctx, source, deployed.component, 'Deployed source', true);
    }
    const stopped = (): void => note(dim(`\nStopped. ${oneLine(source.id)} stays deployed: \`pd delete ${oneLine(source.id)}\` removes it.`));
    if (ac.signal.aborted) return stopped();
    let lastHash = hash(bundle.code);
    let busy: Promise<void> = Promise.resolve();
    const rebuild = async (): Promise<void> => {
      try {
        const next = await bundleComponent(file);
        watcher.track(next.inputs);
        if (hash(next.code) === lastHash) return;
        const updated = await update(ctx, source.id, next, props, source.id);
        lastHash = hash(next.code);
        note(`${green('✔')} ${new Date().toISOString()} updated ${oneLine(updated.id)} from ${next.inputs.map((f) => relative(process.cwd(), f) || basename(f)).join(', ')}`);
      } catch (e) {
        note(`${red('✖')} update failed: ${oneLine(describeError(e))} ${dim('(fix the file and save again)')}`);
      }
    };
    const watcher = new ComponentWatcher(() => {
      busy = busy.then(rebuild);
    });
    watcher.track(bundle.inputs);
    note(dim(`Watching ${bundle.inputs.length} file${bundle.inputs.length === 1 ? '' : 's'}; streaming events and logs of ${oneLine(source.id)} (Ctrl-C to stop)`));
    onStop = () => {
      watcher.close();
      stopped();
    };
    const emits = follow(ctx, ctx.client, source.id, 'emits', { signal: ac.signal, print: (e) => printEvent(ctx, e) });
    const logs = follow(ctx, ctx.client, source.id, 'observations', { signal: ac.signal, print: (e) => printObservation(ctx, e) });
    try {
      await Promise.all([emits, logs]);
    } finally {
      watcher.close();
      ac.abort();
    }
  },
};

async function update(ctx: CommandContext, id: string, bundle: Bundle, props: Record<string, unknown> | undefined, ref: string): Promise<Source> {
  const body: Record<string, unknown> = { component_code: bundle.code };
  if (props) body.configured_props = props;
  const res = await onSource(ref, () => ctx.client.read('PUT', `/sources/${encodeURIComponent(id)}`, data(SOURCE), { body }));
  return res.data;
}
