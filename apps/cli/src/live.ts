import { ApiClient } from './api-client';
import { CommandContext } from './command';
import { cyan, dim, formatTime, jsonText, multiLine, note, oneLine, out, printJsonLine, red, yellow } from './output';
import { EVENT_SUMMARY, EventSummary } from './sources';
import { followStream } from './sse';

/** Printing of event summaries and `$logs` / `$errors` observations, shared by events, logs and dev. */
export function printEvent(ctx: CommandContext, e: EventSummary): void {
  if (ctx.json) return printJsonLine(e);
  const channel = e.metadata?.name ? ` ${cyan(`[${oneLine(e.metadata.name)}]`)}` : '';
  const summary = e.summary ? ` ${oneLine(e.summary)}` : '';
  out(dim(`${formatTime(e.indexed_at_ms)}  ${oneLine(e.id)}`) + channel + summary);
  out(jsonText(e.event, 2));
}

interface LogEvent {
  ts?: number | string;
  k?: string;
  msg?: unknown;
  /** The step that wrote the line (workflows' `$logs`). */
  step?: string;
  error?: { name?: string; message?: string; stack?: string; code?: string; cellId?: string };
}

export function printObservation(ctx: CommandContext, e: EventSummary): void {
  if (ctx.json) return printJsonLine(e);
  const ev = (e.event ?? {}) as LogEvent;
  const when = formatTime(typeof ev.ts === 'number' ? ev.ts : typeof ev.ts === 'string' ? Date.parse(ev.ts) : e.indexed_at_ms) || formatTime(e.indexed_at_ms);
  if (e.metadata?.name === '$errors' || ev.error) {
    const err = ev.error ?? {};
    // A source's error has name and message; a workflow's (the spec's form) code, cellId and stack.
    // The event id ends the line: it is what `pd replay <workflow> <event id>` takes.
    const stack = typeof err.stack === 'string' ? err.stack.split('\n') : [];
    const message = err.message ?? stack[0]?.replace(/^[^:]*:\s*/, '') ?? jsonText(e.event);
    out(`${dim(when)} ${red('error')} ${oneLine(String(err.name ?? err.code ?? 'Error'))}: ${multiLine(String(message))} ${dim(`(event ${oneLine(e.id)})`)}`);
    if (stack.length > 1) out(dim(multiLine(stack.slice(1, 6).join('\n'))));
    return;
  }
  const kind = oneLine(String(ev.k ?? 'log')).replace(/^console\./, '');
  const color = kind === 'error' ? red : kind === 'warn' ? yellow : dim;
  const msg = typeof ev.msg === 'string' ? multiLine(ev.msg) : jsonText(ev.msg ?? e.event);
  const step = typeof ev.step === 'string' && ev.step ? `${cyan(`[${oneLine(ev.step)}]`)} ` : '';
  out(`${dim(when)} ${color(kind.padEnd(5))} ${step}${msg}`);
}

/**
 * The event summary a stream message holds; undefined for a message that is not one (not JSON, or no
 * string `id`), which is skipped. A summary of another shape ends the stream: `unexpected answer from
 * the event stream <path>: indexed_at_ms is not a number`.
 */
export function parseSummary(client: ApiClient, path: string, text: string): EventSummary | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof (v as { id?: unknown } | null)?.id !== 'string') return undefined;
  return client.readAnswer(v, EVENT_SUMMARY, `the event stream ${path}`);
}

/**
 * Streams a source's emits or observations until the signal aborts, skipping
 * ids already printed (the history fetched before following).
 */
export function follow(ctx: CommandContext, client: ApiClient, sourceId: string, stream: 'emits' | 'observations', opts: { after?: string; seen?: Set<string>; signal: AbortSignal; print: (e: EventSummary) => void }): Promise<void> {
  const seen = opts.seen ?? new Set<string>();
  // Sources stream at /sse/dc/<id>, workflows at /sse/p/<id>.
  const kind = sourceId.startsWith('p_') ? 'p' : 'dc';
  const path = `/sse/${kind}/${encodeURIComponent(sourceId)}/${stream}?expand=summary`;
  return followStream(client, path, {
    lastEventId: opts.after,
    signal: opts.signal,
    onNotice: (t) => note(dim(t)),
    onMessage: (msg) => {
      const e = parseSummary(client, path, msg.data);
      if (!e || seen.has(e.id)) return;
      seen.add(e.id);
      if (seen.size > 10_000) seen.clear();
      opts.print(e);
    },
  });
}

/** An AbortController that fires on Ctrl-C / SIGTERM, so streams end cleanly with exit 0. */
export function untilInterrupted(onStop?: () => void): AbortController {
  const ac = new AbortController();
  const stop = (): void => {
    if (ac.signal.aborted) process.exit(130);
    onStop?.();
    ac.abort();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return ac;
}
