import { Command, CommandContext, flag, orgOf, str, usageError } from '../command';
import { follow, printEvent, printObservation, untilInterrupted } from '../live';
import { dim, note, oneLine, printJson } from '../output';
import { arr, data } from '../answer-shape';
import { EVENT_SUMMARY, EventSummary, onSource } from '../sources';
import { basePath, resolveTarget } from '../workflows';

function parseCount(command: string, v: string | undefined, def: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > 100) throw usageError(command, `-n expects a count from 1 to 100 (the last 100 events are kept), got "${v}"`);
  return n;
}

/** The last `limit` summaries of a channel, oldest first. */
async function recent(ctx: CommandContext, ref: string, id: string, limit: number, eventName?: string): Promise<EventSummary[]> {
  const page = await onSource(ref, () =>
    ctx.client.get(`${basePath({ id })}/event_summaries`, data(arr(EVENT_SUMMARY, limit)), { limit, expand: 'event,summary', ...(eventName ? { event_name: eventName } : {}) }),
  );
  return [...page.data].sort((a, b) => compareIds(a.id, b.id));
}

/** Event ids are `<epoch_ms>-<seq>`: compare numerically, part by part. */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am !== bm ? am - bm : (as ?? 0) - (bs ?? 0);
}

export const eventsCommand: Command = {
  name: 'events',
  summary: 'print the latest events of a source or workflow (and follow new ones with -f)',
  usage: 'pd events [-n <count>] [-f] <name or id>',
  help: [
    '-n, --count <n>        how many of the latest events (1-100, default 10), oldest first',
    '-f, --follow           keep streaming new events until Ctrl-C',
    '--org <o_…>            look a source up among an org\'s sources first, a workflow in that org only (default: the profile\'s org_id)',
    'With --json: a JSON array; with --json -f: one JSON event summary per line.',
  ],
  examples: ['pd events -n 1 my-source', 'pd events -f dc_abc', 'pd events -n 100 my-source --json'],
  options: { count: { type: 'string', short: 'n' }, follow: { type: 'boolean', short: 'f' }, org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const ref = positionals[0];
    if (!ref) throw usageError('events', 'pd events needs the name or id of a source or workflow');
    const limit = parseCount('events', str(values, 'count'), 10);
    const { id } = await resolveTarget(ctx.client, ref, orgOf(ctx, values));
    const events = await recent(ctx, ref, id, limit);
    const following = flag(values, 'follow');
    if (ctx.json && !following) return printJson(events);
    if (events.length === 0 && !ctx.json) note(dim(following ? `No events yet for ${oneLine(id)}; waiting for new ones (Ctrl-C to stop)` : `No events yet for ${oneLine(id)}`));
    for (const e of events) printEvent(ctx, e);
    if (!following) return;
    const ac = untilInterrupted();
    await follow(ctx, ctx.client, id, 'emits', { after: events.at(-1)?.id, seen: new Set(events.map((e) => e.id)), signal: ac.signal, print: (e) => printEvent(ctx, e) });
  },
};

export const logsCommand: Command = {
  name: 'logs',
  summary: 'stream the logs (console output and errors) of a source or workflow',
  usage: 'pd logs [-n <count>] [--no-follow] <name or id>',
  help: [
    '-n, --count <n>        how many recent log lines to show first (1-100, default 20)',
    '--no-follow            print the recent logs and exit (default: keep streaming until Ctrl-C)',
    '--org <o_…>            look a source up among an org\'s sources first, a workflow in that org only (default: the profile\'s org_id)',
  ],
  examples: ['pd logs my-source', 'pd logs --no-follow dc_abc --json'],
  options: { count: { type: 'string', short: 'n' }, follow: { type: 'boolean', short: 'f', default: true }, org: { type: 'string' } },
  maxPositionals: 1,
  async run(ctx, { values, positionals }) {
    const ref = positionals[0];
    if (!ref) throw usageError('logs', 'pd logs needs the name or id of a source or workflow');
    const limit = parseCount('logs', str(values, 'count'), 20);
    const { id } = await resolveTarget(ctx.client, ref, orgOf(ctx, values));
    const [logs, errors] = await Promise.all([recent(ctx, ref, id, limit, '$logs'), recent(ctx, ref, id, limit, '$errors')]);
    const history = [...logs, ...errors].sort((a, b) => compareIds(a.id, b.id)).slice(-limit);
    const following = values.follow !== false;
    if (ctx.json && !following) return printJson(history);
    if (history.length === 0 && !ctx.json) note(dim(following ? `No logs yet for ${oneLine(id)}; waiting (Ctrl-C to stop)` : `No logs yet for ${oneLine(id)}`));
    for (const e of history) printObservation(ctx, e);
    if (!following) return;
    const ac = untilInterrupted();
    await follow(ctx, ctx.client, id, 'observations', { after: history.at(-1)?.id, seen: new Set(history.map((e) => e.id)), signal: ac.signal, print: (e) => printObservation(ctx, e) });
  },
};
