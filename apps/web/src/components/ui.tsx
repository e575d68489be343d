import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api';
import { clippedJson } from '../format';
import type { Page } from '../types';

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error as Error;
  return (
    <p class="error" role="alert">
      {e instanceof ApiError ? `${e.message} (${e.status} ${e.code})` : e.message ?? String(e)}
    </p>
  );
}

/** Copies a text to the clipboard and says so. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          // Clipboard refused (not a secure context): select the text so it can be copied by hand.
          const range = document.createRange();
          const node = document.querySelector(`[data-copy="${CSS.escape(text)}"]`);
          if (node) {
            range.selectNodeContents(node);
            getSelection()?.removeAllRanges();
            getSelection()?.addRange(range);
          }
        }
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      <span aria-live="polite">{done ? 'Copied' : label}</span>
    </button>
  );
}

/** A button that asks in a modal dialog before doing something that cannot be undone. */
export function ConfirmButton({ label, question, confirm, onConfirm, danger = true }: { label: string; question: string; confirm: string; onConfirm: () => Promise<void> | void; danger?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  return (
    <>
      <button type="button" class={danger ? 'danger' : 'secondary'} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-label={label}>
        <form
          method="dialog"
          onSubmit={async (e) => {
            e.preventDefault();
            setBusy(true);
            setError(undefined);
            try {
              await onConfirm();
              dialog.current?.close();
            } catch (err) {
              setError(err);
            } finally {
              setBusy(false);
            }
          }}
        >
          <p>{question}</p>
          <ErrorNote error={error} />
          <div class="row">
            <button type="button" class="secondary" onClick={() => dialog.current?.close()}>
              Cancel
            </button>
            <button type="submit" class={danger ? 'danger' : ''} disabled={busy}>
              {confirm}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

/**
 * A value as JSON in a <pre>, cut at MAX_JSON_CHARS with a note saying how much was left out: events,
 * return values and exports reach hundreds of KB each, and a page holds a hundred of them.
 */
export function JsonText({ value }: { value: unknown }) {
  const { text, omitted } = clippedJson(value);
  return (
    <>
      <pre>{text}</pre>
      {omitted ? <p class="sub">… {omitted.toLocaleString()} more characters, not shown: the API's answer has the whole value.</p> : null}
    </>
  );
}

/** An expandable JSON value with a one-line summary; the JSON is rendered only while it is open. */
export function JsonDetails({ summary, value, meta }: { summary: ComponentChildren; value: unknown; meta?: ComponentChildren }) {
  const [open, setOpen] = useState(false);
  return (
    <details class="json" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        <span class="json__summary">{summary}</span>
        {meta ? <span class="json__meta">{meta}</span> : null}
      </summary>
      {open ? <JsonText value={value} /> : null}
    </details>
  );
}

/** Loads data for a page and reloads it when `deps` change or `reload()` is called. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export function Status({ active }: { active: boolean }) {
  return <span class={`badge ${active ? 'badge--on' : 'badge--off'}`}>{active ? 'active' : 'inactive'}</span>;
}

/** Where a keyset-paginated list stands: the cursor of the page shown, and how many pages from the first. */
export interface PageCursor {
  after?: string;
  before?: string;
  n: number;
}

/** Newer / Older buttons under a paginated list (`page_info` of the API). */
export function Pager({ what, info, pageSize, cursor, onMove }: { what: string; info: Page<unknown>['page_info']; pageSize: number; cursor: PageCursor; onMove: (next: PageCursor) => void }) {
  return (
    <nav class="pager" aria-label={`Pages of ${what}`}>
      <span>
        {info.count} of {info.total_count}
      </span>
      <button type="button" class="secondary" disabled={cursor.n === 0 || !info.start_cursor} onClick={() => onMove({ before: info.start_cursor, n: cursor.n - 1 })}>
        Newer
      </button>
      <button type="button" class="secondary" disabled={!info.end_cursor || info.count < pageSize} onClick={() => onMove({ after: info.end_cursor, n: cursor.n + 1 })}>
        Older
      </button>
    </nav>
  );
}
