import { createHash } from 'node:crypto';
import { FSWatcher, watch } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { bundleComponent, Bundle } from '../bundle';
import { Command, CommandContext, list, orgOf, str } from '../command';
import { deploy, givenProps, printSource } from '../deploy';
import { CliError, describeError } from '../errors';
import { follow, printEvent, printObservation, untilInterrupted } from '../live';
import { dim, green, note, red } from '../output';
import { onSource, resolveSource, Source } from '../sources';

const DEBOUNCE_MS = 300;

const hash = (code: string): string => createHash('sha256').update(code).digest('hex');

/**
 * Watches the directories of a component's files (editors often replace a file
 * instead of writing it, which ends a watch on the file itself) and calls
 * `onChange` once per burst of saves.
 */
class ComponentWatcher {
  private watchers = new Map<string, FSWatcher>();
  private files = new Set<string>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly onChange: () => void) {}

  track(inputs: string[]): void {
    this.files = new Set(inputs);
    const dirs = new Set(inputs.map((f) => dirname(f)));
    for (const [dir, w] of this.watchers) {
      if (!dirs.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    for (const dir of dirs) {
      if (this.watchers.has(dir)) continue;
      const w = watch(dir, (_event, name) => {
        if (name && !this.files.has(join(dir, name.toString()))) return;
        clearTimeout(this.timer);
        this.timer = setTimeout(this.onChange, DEBOUNCE_MS);
      });
      w.on('error', (e) => note(red(`watch ${dir}: ${e.message}`)));
      this.watchers.set(dir, w);
    }
  }

  close(): void {
    clearTimeout(this.timer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }
}

export const devCommand: Command = {
  name: 'dev',
  summary: 'deploy a local source, update it on every save, stream its events and logs',
  usage: 'pd dev <file> [--dc <id>] [--prop name=value]... [--props file.json] [--name <name>] [--org <o_…>]',
  help: [
    '--dc <id or name>      attach to an existing source instead of deploying a new one',
    '--prop, --props        prop values (as for pd deploy); with --dc they replace the source\'s props',
    '--name <name>          name of a newly deployed source',
    '--org <o_…>            deploy inside an org, or find the --dc source there first (default: the profile\'s org_id)',
    'Watches the file and every local file it imports; Ctrl-C stops (the source stays deployed).',
  ],
  examples: ['pd dev sources/my-source.mjs --prop url=https://example.com/feed.xml', 'pd dev sources/my-source.mjs --dc dc_abc'],
  options: { dc: { type: 'string' }, prop: { type: 'string', multiple: true }, props: { type: 'string' }, name: { type: 'string' }, org: { type: 'string' } },
  async run(ctx, { values, positionals }) {
    const file = positionals[0];
    if (!file) throw new CliError('pd dev needs the file of a source component');
    const orgId = orgOf(ctx, values);
    const propInput = { flags: list(values, 'prop'), file: str(values, 'props') };
    let source: Source;
    let bundle: Bundle;
    let props: Record<string, unknown> | undefined;
    const dc = str(values, 'dc');
    if (dc) {
      const existing = await resolveSource(ctx.client, dc, orgId);
      bundle = await bundleComponent(file);
      const given = givenProps(propInput).values;
      props = Object.keys(given).length > 0 ? given : undefined;
      source = await update(ctx, existing.id, bundle, props, dc);
      printSource(ctx, source, undefined, 'Attached to source', true);
    } else {
      const deployed = await deploy(ctx, file, { name: str(values, 'name'), orgId, props: propInput });
      source = deployed.source;
      bundle = deployed.bundle as Bundle;
      props = undefined; // the server keeps the props given on deploy
      printSource(ctx, source, deployed.component, 'Deployed source', true);
    }
    let lastHash = hash(bundle.code);
    let busy: Promise<void> = Promise.resolve();
    const rebuild = async (): Promise<void> => {
      try {
        const next = await bundleComponent(file);
        watcher.track(next.inputs);
        if (hash(next.code) === lastHash) return;
        const updated = await update(ctx, source.id, next, props, source.id);
        lastHash = hash(next.code);
        note(`${green('✔')} ${new Date().toISOString()} updated ${updated.id} from ${next.inputs.map((f) => relative(process.cwd(), f) || basename(f)).join(', ')}`);
      } catch (e) {
        note(`${red('✖')} update failed: ${describeError(e)} ${dim('(fix the file and save again)')}`);
      }
    };
    const watcher = new ComponentWatcher(() => {
      busy = busy.then(rebuild);
    });
    watcher.track(bundle.inputs);
    note(dim(`Watching ${bundle.inputs.length} file${bundle.inputs.length === 1 ? '' : 's'}; streaming events and logs of ${source.id} (Ctrl-C to stop)`));
    const ac = untilInterrupted(() => {
      watcher.close();
      note(dim(`\nStopped. ${source.id} stays deployed: \`pd delete ${source.id}\` removes it.`));
    });
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
  const res = await onSource(ref, () => ctx.client.request<{ data: Source }>('PUT', `/sources/${encodeURIComponent(id)}`, { body }));
  return res.data;
}
