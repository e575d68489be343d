import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import type { ConfigurableProp } from '../types';
import { initialRaw, NO_VALUE, Raw, toConfigured } from './props-values';

/** How long typing in a text field marked `reloadProps` waits before the props are asked for again. */
const SETTLE_MS = 400;

/** A prop's type and options: when they change (other options for other values), its value starts afresh. */
const shape = (p: ConfigurableProp): string => JSON.stringify([p.type, p.options ?? null, p.default ?? null]);

type SetRaw = (f: (r: Record<string, Raw>) => Record<string, Raw>) => void;

export interface DynamicProps {
  /** The props the form shows: the component's own, then those its additionalProps() added for the values. */
  props: ConfigurableProp[];
  loading: boolean;
  /** The reload endpoint's refusal (400 additional_props_failed, invalid_props…), shown by the form. */
  error: unknown;
  /** Shows these props as they are (a component just read, or a source's own configurable_props). */
  show(props: ConfigurableProp[]): void;
  /** The value of `prop` changed: when it is marked `reloadProps`, ask for the props again. */
  changed(prop: ConfigurableProp): void;
  /** Asks for the props of the values the form holds (after the state settles). */
  reload(): void;
  /** The props for the values held now, once a reload waiting or under way has answered; undefined if it failed. */
  settled(): Promise<ConfigurableProp[] | undefined>;
}

/**
 * Pipedream's reloadProps in the form: when a prop marked `reloadProps: true` changes, the values given
 * so far go to `POST /components/{id}/props/reload` (with the source being edited: an update starts
 * from the props additionalProps() added for it), and the props it answers replace the shown ones.
 * A prop new to the form (or whose type, options or default changed) starts from its default; one seen
 * before keeps what was typed. Only the newest answer counts.
 */
export function useDynamicProps(componentId: string | undefined, own: ConfigurableProp[], raw: Record<string, Raw>, setRaw: SetRaw, sourceId?: string): DynamicProps {
  const [props, setProps] = useState<ConfigurableProp[]>([]);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<unknown>();
  const latest = useRef({ componentId, own, raw, sourceId });
  latest.current = { componentId, own, raw, sourceId };
  /** What is shown, kept in step with the state (an awaiting submit reads it before the next render). */
  const shown = useRef<ConfigurableProp[]>([]);
  /** What a prop's value depends on, last shown per name: a prop coming back with the same keeps its value. */
  const seen = useRef(new Map<string, string>());
  const seq = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout>>();
  const inflight = useRef<Promise<ConfigurableProp[] | undefined>>();
  /** The last answer was a refusal: a submit asks again rather than deploying props that may be wrong. */
  const failed = useRef(false);

  useEffect(() => () => clearTimeout(timer.current), []);

  const put = (next: ConfigurableProp[]) => {
    shown.current = next;
    for (const p of next) seen.current.set(p.name, shape(p));
    setProps(next);
  };

  const fetchNow = (): Promise<ConfigurableProp[] | undefined> => {
    timer.current = undefined;
    const { componentId: id, own: statics, raw: values, sourceId: editing } = latest.current;
    if (!id) return Promise.resolve(undefined);
    const mine = ++seq.current;
    setLoading(true);
    setError(undefined);
    // Values the browser cannot read yet (bad JSON, an empty required field) are left out, as on Pipedream.
    const p = api.reloadProps(id, toConfigured(statics, values).value, editing).then(
      (next) => {
        if (mine !== seq.current) return shown.current;
        const fresh = next.filter((q) => seen.current.get(q.name) !== shape(q) && !NO_VALUE.has(q.type));
        if (fresh.length) setRaw((r) => ({ ...r, ...Object.fromEntries(fresh.map((q) => [q.name, initialRaw(q)])) }));
        failed.current = false;
        put(next);
        setLoading(false);
        return next;
      },
      (e: unknown) => {
        if (mine !== seq.current) return shown.current;
        // The added props belonged to other values: only the component's own are certain.
        failed.current = true;
        put(statics);
        setError(e);
        setLoading(false);
        return undefined;
      },
    );
    inflight.current = p;
    return p;
  };

  const schedule = (delay: number) => {
    clearTimeout(timer.current);
    // Read at fire time: the field's new value is in the state by then.
    timer.current = setTimeout(() => void fetchNow(), delay);
  };

  return {
    props,
    loading,
    error,
    show(next) {
      clearTimeout(timer.current);
      timer.current = undefined;
      seq.current++;
      inflight.current = undefined;
      failed.current = false;
      seen.current = new Map();
      setError(undefined);
      setLoading(false);
      put(next);
    },
    changed(prop) {
      if (!prop.reloadProps) return;
      const typed = !prop.options && ['string', 'integer', 'object', 'json', 'any', 'sql', 'http_request', 'app'].includes(prop.type);
      schedule(typed ? SETTLE_MS : 0);
    },
    reload: () => schedule(0),
    async settled() {
      if (timer.current !== undefined || failed.current) {
        clearTimeout(timer.current);
        return fetchNow();
      }
      for (let p = inflight.current; p; p = inflight.current) {
        await p;
        if (p === inflight.current) break;
      }
      return failed.current ? undefined : shown.current;
    },
  };
}
