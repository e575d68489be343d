import { Command, CommandContext, orgOf, str, usageError } from '../command';
import { arr, data, dict, json, num, obj, opt, ShapeOf, str as string } from '../answer-shape';
import { dim, green, jsonText, oneLine, out, printJson, red, withSpinner } from '../output';
import { resolveWorkflow } from '../workflows';

/** A run's record (`GET /workflows/{id}/runs`): the fields `pd runs` prints. */
const STEP_RECORD = obj({
  name: string,
  cell_id: string,
  duration_ms: num,
  inputs: opt(dict),
  return_value: json,
  exports: opt(dict),
  error: opt(obj({ name: string, message: string })),
  exit: opt(obj({ reason: json })),
});
const RUN_RECORD = obj({ id: string, status: string, started_at: string, duration_ms: num, deployment_id: string, steps: arr(STEP_RECORD) });
type RunRecord = ShapeOf<typeof RUN_RECORD>;

const short = (v: unknown): string => {
  const text = jsonText(v);
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
};

export const replayCommand: Command = {
  name: 'replay',
  summary: "run a workflow again with a failed run's original event",
  usage: 'pd replay <workflow name or id> <event id>',
  help: [
    '<event id> is the id of one of the workflow\'s $errors events: `pd logs --no-follow <workflow>` ends each',
    '                       error line with it, "(event 1763930000000-0)"; `pd logs --no-follow --json <workflow>`',
    '                       has it as the "id" of the entries whose metadata.name is "$errors"',
    '--org <o_…>            look the workflow up in that org only (default: the profile\'s org_id)',
  ],
  examples: ['pd replay new-order-to-slack 1763930000000-0'],
  options: { org: { type: 'string' } },
  maxPositionals: 2,
  async run(ctx, { values, positionals }) {
    const [ref, eventId] = positionals;
    if (!ref || !eventId) throw usageError('replay', 'pd replay needs a workflow and the id of one of its $errors events');
    if (!/^\d{1,15}-\d{1,9}$/.test(eventId)) {
      throw usageError('replay', `"${eventId}" is not an event id: the id of a $errors event looks like 1763930000000-0, the end of an error line of \`pd logs --no-follow <workflow>\``);
    }
    const w = await resolveWorkflow(ctx.client, ref, orgOf(ctx, values));
    const res = await withSpinner(`Replaying ${eventId}`, () => ctx.client.read('POST', `/workflows/${encodeURIComponent(w.id)}/replay`, data(obj({ invocation_id: string })), { body: { event_id: eventId } }), 'Replayed');
    if (ctx.json) return printJson(res.data);
    out(`${green('✔')} Replayed ${oneLine(eventId)} into ${oneLine(w.id)} (${oneLine(w.name)}) ${dim(`invocation_id=${oneLine(res.data.invocation_id)}`)}`);
  },
};

export const runsCommand: Command = {
  name: 'runs',
  summary: 'the step-by-step record of the last runs of a workflow',
  usage: 'pd runs [-n <count>] <workflow name or id>',
  help: ['-n, --count <n>        how many runs (1-100, default 5), newest first', '--org <o_…>            look the workflow up in that org only (default: the profile\'s org_id)'],
  examples: ['pd runs new-order-to-slack', 'pd runs -n 1 p_abc --json'],
  options: { count: { type: 'string', short: 'n' }, org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const ref = positionals[0];
    if (!ref) throw usageError('runs', 'pd runs needs a workflow name or id');
    const n = str(values, 'count') ?? '5';
    if (!/^\d+$/.test(n) || Number(n) < 1 || Number(n) > 100) throw usageError('runs', `-n expects a count from 1 to 100, got "${n}"`);
    const w = await resolveWorkflow(ctx.client, ref, orgOf(ctx, values));
    const res = await ctx.client.get(`/workflows/${encodeURIComponent(w.id)}/runs`, data(arr(RUN_RECORD, Number(n))), { limit: Number(n) });
    if (ctx.json) return printJson(res.data);
    if (!res.data.length) return out(dim(`No runs yet for ${oneLine(w.id)}`));
    for (const run of res.data) printRun(ctx, run);
  },
};

function printRun(_ctx: CommandContext, run: RunRecord): void {
  const status = run.status === 'error' ? red('error') : run.status === 'exit' ? 'exit' : green('success');
  out(`${dim(oneLine(String(run.started_at)))} ${status} ${oneLine(String(run.id))} ${dim(oneLine(`${run.duration_ms} ms, ${run.deployment_id}`))}`);
  for (const s of run.steps) {
    const mark = s.error ? red('✖') : green('✔');
    out(`  ${mark} ${oneLine(String(s.name))} ${dim(oneLine(`${s.duration_ms} ms ${s.cell_id}`))}`);
    if (s.inputs && Object.keys(s.inputs).length) out(`      ${dim('inputs')}  ${short(s.inputs)}`);
    if (s.exports && Object.keys(s.exports).length) out(`      ${dim('exports')} ${short(s.exports)}`);
    if (s.return_value !== undefined) out(`      ${dim('return')}  ${short(s.return_value)}`);
    if (s.exit) out(`      ${dim('exit')}    ${oneLine(String(s.exit.reason ?? ''))}`);
    if (s.error) out(`      ${red(oneLine(`${s.error.name}: ${s.error.message}`))}`);
  }
}
