import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ago, oneLine, when } from '../format';
import { follow, LiveState } from '../live';
import type { EventSummary, Page } from '../types';
import { ErrorNote, JsonDetails } from './ui';

export const KEEP = 100;

/** Keeps a newest-first list of at most KEEP events, without duplicates (a resumed stream may replay). */
function merge(list: EventSummary[], more: EventSummary[]): EventSummary[] {
  const seen = new Set(list.map((e) => e.id));
  const fresh = more.filter((e) => !seen.has(e.id));
  return [...fresh, ...list].sort((a, b) => (a.indexed_at_ms === b.indexed_at_ms ? (a.id < b.id ? 1 : -1) : b.indexed_at_ms - a.indexed_at_ms)).slice(0, KEEP);
}

export interface LiveEvents {
  events: EventSummary[];
  state: LiveState;
  error?: unknown;
}

/**
 * The retained events of one stream of a source or workflow, then the live ones (SSE), newest first.
 * `history(channel)` reads the retained ones of a channel (`undefined`: the emits, else `$logs` / `$errors`).
 */
export function useEvents(id: string, kind: 'emits' | 'observations', generation: number, history: (channel: string | undefined) => Promise<Page<EventSummary>>): LiveEvents {
  const [events, setEvents] = useState<EventSummary[]>([]);
  const [state, setState] = useState<LiveState>('connecting');
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    setEvents([]);
    const stop = follow(id, kind, (e) => setEvents((l) => merge(l, [e])), setState);
    const channels = kind === 'emits' ? [undefined] : ['$logs', '$errors'];
    Promise.all(channels.map(history))
      .then((pages) => {
        // The emits history holds every channel but $logs/$errors' own; keep the custom channels.
        const all = pages.flatMap((p) => p.data).filter((e) => kind === 'observations' || !e.metadata.name.startsWith('$'));
        setEvents((l) => merge(l, all));
      })
      .catch(setError);
    return stop;
  }, [id, kind, generation]);
  return { events, state, error };
}

/** A live list of events, newest first, each expandable to its JSON; `actions` adds controls to an entry. */
export function EventList({ label, list, empty, actions }: { label: string; list: LiveEvents; empty: string; actions?: (e: EventSummary) => ComponentChildren }) {
  return (
    <div class="events">
      <p class="live" aria-live="polite">
        <span class={`dot dot--${list.state}`} aria-hidden="true" /> {list.state === 'live' ? 'Live' : list.state === 'closed' ? 'Not live' : list.state === 'retrying' ? 'Reconnecting…' : 'Connecting…'}
      </p>
      <ErrorNote error={list.error} />
      {list.events.length ? (
        <ol class="event-list" aria-label={label}>
          {list.events.map((e) => {
            const extra = actions?.(e);
            return (
              <li key={e.id} class={e.metadata.name === '$errors' ? 'event event--error' : 'event'}>
                <JsonDetails
                  value={e.event}
                  summary={
                    <>
                      {e.metadata.name ? <span class={`channel ${e.metadata.name === '$errors' ? 'channel--err' : ''}`}>{e.metadata.name}</span> : null} {summaryLine(e)}
                    </>
                  }
                  meta={<time dateTime={new Date(e.indexed_at_ms).toISOString()} title={when(e.indexed_at_ms)}>{ago(e.indexed_at_ms)}</time>}
                />
                {extra ? <div class="event__actions">{extra}</div> : null}
              </li>
            );
          })}
        </ol>
      ) : (
        <p class="empty">{empty}</p>
      )}
    </div>
  );
}

/** Longest one-line summary of an event: its `$emit` summary (a tenant's string of any length) or error line is cut there. */
export const SUMMARY_CHARS = 300;

/** The line an event shows closed: its `$emit` summary, its error or log line, else its data. */
export function summaryLine(e: EventSummary): string {
  return oneLine(e.summary ?? errorLine(e) ?? e.event, SUMMARY_CHARS);
}

/** `$errors` events carry `{ error: { name, message } }` (a workflow's: `{ error: { code } }`); `$logs` `{ msg }`-like payloads. */
function errorLine(e: EventSummary): string | undefined {
  const ev = e.event as { error?: { name?: string; code?: string; message?: string }; k?: string; msg?: unknown } | null;
  if (e.metadata.name === '$errors' && ev?.error) return `${ev.error.name ?? ev.error.code ?? 'Error'}: ${ev.error.message ?? ''}`;
  if (e.metadata.name === '$logs' && ev?.msg !== undefined) return `${ev.k ?? 'log'}: ${oneLine(ev.msg)}`;
  return undefined;
}
