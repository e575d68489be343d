import { useState } from 'preact/hooks';
import { api } from '../api';
import type { ConfigurableProp, PropOption } from '../types';
import { clip } from '../format';
import { ErrorNote } from './ui';

import { isArray, MASK, optionLabel, optionValue, Raw, takesNoValue, TimerRaw, toConfigured } from './props-values';

/** Longest label of a prop or of one of its options shown, and longest description or alert content: the component author's texts, of any length. */
const LABEL_CHARS = 200;
const DESCRIPTION_CHARS = 2000;
/** An option's label as the form shows it: a string (options() may answer any JSON), cut. */
const shownLabel = (o: PropOption): string => {
  const l = optionLabel(o) as unknown;
  return clip(typeof l === 'string' ? l : JSON.stringify(l === undefined ? optionValue(o) : l) ?? '', LABEL_CHARS);
};

interface Props {
  componentId: string;
  /** The source being edited: options of the props its additionalProps() added start from its stored props. */
  sourceId?: string;
  props: ConfigurableProp[];
  raw: Record<string, Raw>;
  onChange: (name: string, value: Raw) => void;
  errors: Record<string, string>;
}

/** The form for a component's configurable_props: one field per prop, of the prop's type. */
export function PropsForm({ componentId, sourceId, props, raw, onChange, errors }: Props) {
  if (!props.length) return <p class="hint">This component has no props to configure.</p>;
  return (
    <fieldset class="props">
      <legend>Props</legend>
      {props.map((p) => (
        <PropField key={p.name} componentId={componentId} sourceId={sourceId} prop={p} value={raw[p.name]} onChange={(v) => onChange(p.name, v)} error={errors[p.name]} all={props} raw={raw} />
      ))}
    </fieldset>
  );
}

function PropField({ componentId, sourceId, prop: p, value, onChange, error, all, raw }: { componentId: string; sourceId?: string; prop: ConfigurableProp; value: Raw; onChange: (v: Raw) => void; error?: string; all: ConfigurableProp[]; raw: Record<string, Raw> }) {
  const id = `prop-${p.name}`;
  // A component's label and description are its author's text of any length: cut, so the form stays a form.
  const label = clip(p.label ?? p.name, LABEL_CHARS);
  const help = [p.description === undefined ? undefined : clip(p.description, DESCRIPTION_CHARS), p.optional ? 'Optional.' : '', p.secret ? 'Secret: stored encrypted, never shown again.' : ''].filter(Boolean).join(' ');
  const describedBy = [help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-describedby': describedBy, 'aria-invalid': error ? true : undefined };
  const note = (
    <>
      {help ? (
        <p id={`${id}-help`} class="hint">
          {help}
        </p>
      ) : null}
      {error ? (
        <p id={`${id}-error`} class="field-error" role="alert">
          {error}
        </p>
      ) : null}
    </>
  );

  if (takesNoValue(p)) {
    const schedule = p.static?.cron ? `cron ${p.static.cron}` : `every ${p.static?.intervalSeconds} seconds`;
    const what =
      p.type === '$.interface.http'
        ? 'Gets its own endpoint URL when deployed.'
        : p.type === '$.service.db'
          ? 'A key-value store kept for this source.'
          : p.type === '$.interface.timer'
            ? `Runs on the component's own schedule: ${schedule}.`
            : clip(typeof p.content === 'string' ? p.content : '', DESCRIPTION_CHARS);
    return (
      <div class="field field--info">
        <span class="field__label">{label}</span> <code>{p.type}</code>
        <p class="hint">{what}</p>
      </div>
    );
  }

  let input;
  if (p.type === '$.interface.timer') {
    const t = value as TimerRaw;
    const set = (patch: Partial<TimerRaw>) => onChange({ ...t, ...patch });
    input = (
      <div class="timer" role="group" aria-labelledby={`${id}-label`}>
        <label>
          <input type="radio" name={`${id}-mode`} checked={t.mode === 'interval'} onChange={() => set({ mode: 'interval' })} /> Every
        </label>
        <label class="inline">
          <span class="visually-hidden">Interval in seconds</span>
          <input {...common} type="number" min={1} value={t.interval} disabled={t.mode !== 'interval'} onInput={(e) => set({ interval: e.currentTarget.value })} /> seconds
        </label>
        <label>
          <input type="radio" name={`${id}-mode`} checked={t.mode === 'cron'} onChange={() => set({ mode: 'cron' })} /> Cron
        </label>
        <label class="inline">
          <span class="visually-hidden">Cron expression</span>
          <input type="text" placeholder="*/5 * * * *" value={t.cron} disabled={t.mode !== 'cron'} onInput={(e) => set({ cron: e.currentTarget.value })} />
        </label>
        <label class="inline">
          <span class="visually-hidden">Time zone</span>
          <input type="text" placeholder="time zone (e.g. Europe/Paris)" value={t.timezone} disabled={t.mode !== 'cron'} onInput={(e) => set({ timezone: e.currentTarget.value })} />
        </label>
      </div>
    );
  } else if (p.type === 'boolean') {
    input = <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />;
  } else if (p.type === 'app') {
    input = (
      <textarea
        {...common}
        class="mono"
        rows={3}
        placeholder={'{ "api_key": "…" }'}
        value={value === MASK ? '' : String(value ?? '')}
        onInput={(e) => onChange(e.currentTarget.value || (value === MASK ? MASK : ''))}
        aria-label={`${label}: credentials ($auth) as JSON${value === MASK ? ', stored; leave empty to keep' : ''}`}
      />
    );
  } else if (p.options && isArray(p)) {
    const chosen = new Set(Array.isArray(value) ? value : []);
    input = (
      <select {...common} multiple size={Math.min(6, p.options.length)} onChange={(e) => onChange([...e.currentTarget.selectedOptions].map((o) => o.value))}>
        {p.options.map((o) => {
          const v = JSON.stringify(optionValue(o));
          return (
            <option key={v} value={v} selected={chosen.has(v)}>
              {shownLabel(o)}
            </option>
          );
        })}
      </select>
    );
  } else if (p.options) {
    input = (
      <select {...common} value={String(value ?? '')} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">{p.optional ? '— none —' : '— choose —'}</option>
        {p.options.map((o) => {
          const v = JSON.stringify(optionValue(o));
          return (
            <option key={v} value={v}>
              {shownLabel(o)}
            </option>
          );
        })}
      </select>
    );
  } else if (isArray(p)) {
    input = <textarea {...common} rows={3} value={String(value ?? '')} onInput={(e) => onChange(e.currentTarget.value)} placeholder="one value per line" />;
  } else if (['object', 'json', 'any', 'http_request', 'sql'].includes(p.type)) {
    input = <textarea {...common} class="mono" rows={4} value={String(value ?? '')} onInput={(e) => onChange(e.currentTarget.value)} placeholder={p.type === 'sql' ? 'SQL or JSON' : 'JSON'} />;
  } else if (p.type === 'integer') {
    input = <input {...common} type="number" step={1} min={p.min} max={p.max} value={String(value ?? '')} onInput={(e) => onChange(e.currentTarget.value)} />;
  } else {
    input = <input {...common} type={p.secret ? 'password' : 'text'} autocomplete={p.secret ? 'new-password' : 'off'} value={String(value ?? '')} onInput={(e) => onChange(e.currentTarget.value)} />;
  }

  return (
    <div class={`field${error ? ' field--error' : ''}`}>
      <label id={`${id}-label`} for={id} class="field__label">
        {label} {p.optional ? null : <span aria-hidden="true">*</span>}
        <code class="field__type">{p.type}</code>
      </label>
      {input}
      {p.remoteOptions ? <RemoteOptions componentId={componentId} sourceId={sourceId} prop={p} onPick={(v) => onChange(isArray(p) ? JSON.stringify([v]).slice(1, -1) : typeof v === 'string' ? v : JSON.stringify(v))} all={all} raw={raw} /> : null}
      {note}
    </div>
  );
}

/** A prop's async options(), a page at a time, through the API's options endpoint. */
function RemoteOptions({ componentId, sourceId, prop, onPick, all, raw }: { componentId: string; sourceId?: string; prop: ConfigurableProp; onPick: (v: unknown) => void; all: ConfigurableProp[]; raw: Record<string, Raw> }) {
  const [state, setState] = useState<{ options: PropOption[]; page: number; context: unknown; done: boolean }>({ options: [], page: 0, context: null, done: false });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const load = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const chosen = toConfigured(all.filter((p) => p.name !== prop.name), raw).value;
      const r = await api.propOptions(componentId, prop.name, { page: state.page, prevContext: state.context ?? undefined, configured_props: chosen, ...(sourceId ? { source_id: sourceId } : {}) });
      // Pages continue until options() answers an empty page (Pipedream's convention).
      setState((s) => ({ options: [...s.options, ...r.options], page: s.page + 1, context: r.context, done: r.options.length === 0 }));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const id = `prop-${prop.name}-options`;
  return (
    <div class="remote-options">
      {state.options.length ? (
        <label>
          Options from the component
          <select id={id} onChange={(e) => e.currentTarget.value && onPick(JSON.parse(e.currentTarget.value))}>
            <option value="">— pick one —</option>
            {state.options.map((o) => {
              const v = JSON.stringify(optionValue(o));
              return (
                <option key={v} value={v}>
                  {shownLabel(o)}
                </option>
              );
            })}
          </select>
        </label>
      ) : null}
      {state.done ? null : (
        <button type="button" class="secondary" onClick={load} disabled={busy}>
          {state.page === 0 ? 'Load options' : 'Load more options'}
        </button>
      )}
      <ErrorNote error={error} />
    </div>
  );
}
