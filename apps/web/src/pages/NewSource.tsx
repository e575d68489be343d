import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { navigate, BASE } from '../router';
import type { Component, ConfigurableProp, Source } from '../types';
import { CodeEditor } from '../components/CodeEditor';
import { PropsForm } from '../components/PropsForm';
import { ErrorNote } from '../components/ui';
import { initialRaw, Raw, toConfigured } from '../components/props-values';
import { useDynamicProps } from '../components/dynamic-props';

const EXAMPLE = `module.exports = {
  name: "Hello HTTP",
  version: "0.1.0",
  props: {
    http: "$.interface.http",
    greeting: { type: "string", label: "Greeting", optional: true, default: "hi" },
  },
  // event is the HTTP request to the endpoint, or what "Run now" sends (nothing).
  async run(event) {
    const request = event || {};
    const summary = request.method ? \`\${request.method} \${request.path}\` : "manual run";
    this.$emit({ greeting: this.greeting, method: request.method, body: request.body }, { summary });
  },
};
`;

/**
 * Deploys a component as a source (POST /v1/sources), or edits one (PUT /v1/sources/{id}): code pasted,
 * uploaded or taken from the registry is saved as a component first (POST /v1/components), which
 * returns its configurable_props; the props form is generated from them. A prop marked `reloadProps`
 * asks for the props again when its value changes (the component's additionalProps()).
 */
export function NewSourcePage({ editId }: { editId?: string }) {
  const [source, setSource] = useState<Source>();
  const [code, setCode] = useState(editId ? '' : EXAMPLE);
  const [registryKey, setRegistryKey] = useState('');
  const [component, setComponent] = useState<Component>();
  /** The code the shown component was read from: a changed editor means "read the props again". */
  const [readCode, setReadCode] = useState<string>();
  const [name, setName] = useState('');
  const [raw, setRaw] = useState<Record<string, Raw>>({});
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  /** Editing a source that cannot be read (gone, another account's): the error alone, never an empty "New source" form. */
  const [unreadable, setUnreadable] = useState<unknown>();
  const dynamic = useDynamicProps(component?.id, component?.configurable_props ?? [], raw, setRaw, source?.id);
  const props = dynamic.props;

  /**
   * Shows a component's props; `from` is the editor text it was read from. `shown` is a source's own
   * configurable_props (with those additionalProps() added for its values); without it, a component
   * with `reloadProps` props asks at once for the props of its defaults.
   */
  const adopt = (c: Component, from: string, current?: Record<string, unknown>, shown?: ConfigurableProp[]) => {
    const list = shown ?? c.configurable_props;
    setComponent(c);
    setReadCode(from);
    setRaw(Object.fromEntries(list.map((p) => [p.name, initialRaw(p, current?.[p.name])])));
    setFieldErrors({});
    dynamic.show(list);
    if (!shown && c.configurable_props.some((p) => p.reloadProps)) dynamic.reload();
  };

  useEffect(() => {
    if (!editId) return;
    (async () => {
      const s = await api.source(editId);
      const c = await api.component(s.component_id);
      setSource(s);
      setName(s.name);
      setCode(c.code);
      adopt(c, c.code, s.configured_props, s.configurable_props);
    })().catch(setUnreadable);
  }, [editId]);

  const run = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await f();
    } catch (e) {
      if (e instanceof ApiError && e.field && props.some((p) => p.name === e.field)) setFieldErrors({ [e.field]: e.message.replace(/^configured_props\.[^:]+:\s*/, '') });
      else setError(e);
    } finally {
      setBusy(false);
    }
  };

  const readProps = () => run(async () => adopt(await api.saveComponent(code), code));
  const fromRegistry = () =>
    run(async () => {
      const c = await api.registryComponent(registryKey.trim());
      setCode(c.code);
      adopt(c, c.code);
    });

  const submit = () =>
    run(async () => {
      let c = component;
      if (!c || code !== readCode) {
        c = await api.saveComponent(code);
        adopt(c, code);
        return setError(new Error('The code changed: its props were read again. Check them, then deploy.'));
      }
      // A value that changes the props may still be on its way: deploy only with the props it gives.
      const before = JSON.stringify(props);
      const current = await dynamic.settled();
      if (!current) return;
      if (JSON.stringify(current) !== before) return setError(new Error('The props changed with the values chosen: check them, then deploy.'));
      const { value, errors } = toConfigured(current, raw);
      setFieldErrors(errors);
      if (Object.keys(errors).length) return;
      const body = { component_id: c.id, configured_props: value, ...(name.trim() ? { name: name.trim() } : {}) };
      const saved = source ? await api.updateSource(source.id, { ...body, active: source.active }) : await api.createSource(body);
      navigate(`/sources/${encodeURIComponent(saved.id)}`);
    });

  if (unreadable) return <ErrorNote error={unreadable} />;
  if (editId && !source) return <p aria-live="polite">Loading…</p>;
  return (
    <section aria-labelledby="new-title">
      <div class="page-head">
        <h1 id="new-title">{source ? `Edit ${source.name}` : 'New source'}</h1>
        {source ? <a href={`${BASE}/sources/${encodeURIComponent(source.id)}`}>Back to the source</a> : null}
      </div>
      {/* The API checks the props (types, min/max, options) and names the field; its message is shown there. */}
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <div class="card">
          <h2>Component</h2>
          <div class="row wrap">
            <label class="inline">
              Upload a file{' '}
              <input
                type="file"
                accept=".js,.mjs,.cjs,.ts,text/javascript"
                onChange={async (e) => {
                  const f = e.currentTarget.files?.[0];
                  if (f) setCode(await f.text());
                }}
              />
            </label>
            <span class="sub">or from the registry:</span>
            <label for="registry-key" class="visually-hidden">
              Registry component key
            </label>
            <input id="registry-key" type="text" placeholder="e.g. schedule-interval" value={registryKey} onInput={(e) => setRegistryKey(e.currentTarget.value)} />
            <button type="button" class="secondary" disabled={!registryKey.trim() || busy} onClick={fromRegistry}>
              Use registry component
            </button>
          </div>
          <CodeEditor id="component-code" label="Component code" value={code} onInput={setCode} />
          <button type="button" class="secondary" onClick={readProps} disabled={busy || !code.trim()}>
            {component ? 'Read props again' : 'Read props'}
          </button>
          {component ? (
            <p class="hint" aria-live="polite">
              {component.name} {component.version} ({component.id}){code !== readCode ? ' — the code changed since its props were read.' : ''}
            </p>
          ) : null}
        </div>
        {component ? (
          <div class="card">
            <h2>Source</h2>
            <label for="source-name">Name</label>
            <input id="source-name" type="text" maxLength={200} placeholder={component.name} value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby="source-name-help" />
            <p id="source-name-help" class="hint">
              Optional; by default the component's name.
            </p>
            <PropsForm
              componentId={component.id}
              sourceId={source?.id}
              props={props}
              raw={raw}
              errors={fieldErrors}
              onChange={(n, v) => {
                setRaw((r) => ({ ...r, [n]: v }));
                const changed = props.find((p) => p.name === n);
                if (changed) dynamic.changed(changed);
              }}
            />
            <p class="hint" aria-live="polite">
              {dynamic.loading ? 'Loading the props for these values…' : ''}
            </p>
            {dynamic.error ? (
              <p class="error" role="alert">
                The props for these values could not be loaded: {dynamicMessage(dynamic.error)}
              </p>
            ) : null}
          </div>
        ) : null}
        <ErrorNote error={error} />
        {Object.keys(fieldErrors).length ? (
          <p class="error" role="alert">
            Some props need attention: {Object.keys(fieldErrors).join(', ')}.
          </p>
        ) : null}
        {component ? (
          <button type="submit" disabled={busy}>
            {source ? 'Save changes' : 'Deploy'}
          </button>
        ) : null}
      </form>
    </section>
  );
}

const dynamicMessage = (e: unknown): string => (e instanceof ApiError ? `${e.message} (${e.status} ${e.code})` : e instanceof Error ? e.message : String(e));
