import { createHash } from 'node:crypto';
import { basename, relative } from 'node:path';
import { CommandContext } from '../command';
import { describeError } from '../errors';
import { follow, printEvent, printObservation, untilInterrupted } from '../live';
import { dim, green, note, oneLine, red } from '../output';
import { deployWorkflowBody, printWorkflow, readWorkflowFile } from '../workflow-file';
import { ComponentWatcher } from '../file-watcher';

const hash = (body: unknown): string => createHash('sha256').update(JSON.stringify(body)).digest('hex');

/** `pd dev workflow.yaml`: deploys, redeploys on every save of the file or a step's files, streams emits and logs. */
export async function devWorkflow(ctx: CommandContext, file: string, orgId?: string): Promise<void> {
  // Ctrl-C is handled from the start: one that comes while deploying (or just after the workflow is printed) stops cleanly too.
  let onStop = (): void => undefined;
  const ac = untilInterrupted(() => onStop());
  let wf = await readWorkflowFile(file);
  const { workflow, created } = await deployWorkflowBody(ctx, wf, orgId);
  await printWorkflow(ctx, workflow, created ? 'Created workflow' : 'Deployed workflow', true);
  const stopped = (): void => note(dim(`\nStopped. ${oneLine(workflow.id)} stays deployed: \`pd delete ${oneLine(workflow.id)}\` removes it.`));
  if (ac.signal.aborted) return stopped();
  let lastHash = hash(wf.body);
  let busy: Promise<void> = Promise.resolve();
  const rebuild = async (): Promise<void> => {
    try {
      const next = await readWorkflowFile(file);
      watcher.track(next.inputs);
      if (hash(next.body) === lastHash) return;
      if (next.name !== workflow.name) throw new Error(`the name changed from "${workflow.name}" to "${next.name}": stop pd dev and deploy the new name`);
      const { workflow: updated } = await deployWorkflowBody(ctx, next, orgId);
      wf = next;
      lastHash = hash(next.body);
      note(`${green('✔')} ${new Date().toISOString()} deployed ${oneLine(updated.id)} (${oneLine(updated.deployment_id)}) from ${next.inputs.map((f) => relative(process.cwd(), f) || basename(f)).join(', ')}`);
    } catch (e) {
      note(`${red('✖')} deploy failed: ${oneLine(describeError(e))} ${dim('(fix the file and save again)')}`);
    }
  };
  const watcher = new ComponentWatcher(() => {
    busy = busy.then(rebuild);
  });
  watcher.track(wf.inputs);
  note(dim(`Watching ${wf.inputs.length} file${wf.inputs.length === 1 ? '' : 's'}; streaming events and logs of ${oneLine(workflow.id)} (Ctrl-C to stop)`));
  onStop = () => {
    watcher.close();
    stopped();
  };
  const emits = follow(ctx, ctx.client, workflow.id, 'emits', { signal: ac.signal, print: (e) => printEvent(ctx, e) });
  const logs = follow(ctx, ctx.client, workflow.id, 'observations', { signal: ac.signal, print: (e) => printObservation(ctx, e) });
  try {
    await Promise.all([emits, logs]);
  } finally {
    watcher.close();
    ac.abort();
  }
}
