import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ago } from '../format';
import { BASE } from '../router';
import type { Workflow, WorkflowRun } from '../types';
import { CopyButton, ErrorNote, Status, useLoad, Pager, type PageCursor } from '../components/ui';
import { RunStatus } from '../components/workflow';
import { describeTrigger } from '../workflow-runs';

const PAGE = 20;

/** The workflows list: name, trigger, its URL for HTTP triggers, active, the last run. */
export function WorkflowsPage() {
  const [cursor, setCursor] = useState<PageCursor>({ n: 0 });
  const list = useLoad(() => api.workflows({ limit: PAGE, after: cursor.after, before: cursor.before }), [cursor.after, cursor.before]);
  const rows = list.data?.data ?? [];
  const info = list.data?.page_info;

  return (
    <section aria-labelledby="workflows-title">
      <div class="page-head">
        <h1 id="workflows-title">Workflows</h1>
      </div>
      <ErrorNote error={list.error} />
      {list.loading && !list.data ? <p aria-live="polite">Loading…</p> : null}
      {list.data && !rows.length ? (
        <p class="empty">
          No workflows yet. Deploy one with <code>pd deploy workflow.yaml</code> or <code>POST /v1/workflows</code> (see docs/workflows.md).
        </p>
      ) : null}
      {rows.length ? (
        <div class="table-wrap">
          <table class="sources workflows">
            <caption class="visually-hidden">Your workflows</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Trigger</th>
                <th scope="col">State</th>
                <th scope="col">Trigger URL</th>
                <th scope="col">Last run</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((w) => (
                <WorkflowRow key={w.id} workflow={w} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {info && rows.length ? (
        <Pager what="workflows" info={info} pageSize={PAGE} cursor={cursor} onMove={setCursor} />
      ) : null}
    </section>
  );
}

function WorkflowRow({ workflow: w }: { workflow: Workflow }) {
  const [last, setLast] = useState<WorkflowRun | null | undefined>();
  useEffect(() => {
    api.workflowRuns(w.id, 1).then((r) => setLast(r[0] ?? null), () => setLast(null));
  }, [w.id]);
  const trigger = describeTrigger(w);
  const url = w.trigger.endpoint_url;
  return (
    <tr>
      <th scope="row">
        <a href={`${BASE}/workflows/${encodeURIComponent(w.id)}`}>{w.name}</a>
        <div class="sub mono">{w.id}</div>
      </th>
      <td data-label="Trigger">
        {trigger.label}
        <div class="sub">{trigger.detail}</div>
      </td>
      <td data-label="State">
        <Status active={w.active} />
      </td>
      <td data-label="Trigger URL">
        {url ? (
          <span class="endpoint">
            <code data-copy={url}>{url}</code> <CopyButton text={url} label="Copy" />
          </span>
        ) : (
          <span class="sub">—</span>
        )}
      </td>
      <td data-label="Last run">
        {last === undefined ? (
          '…'
        ) : last === null ? (
          <span class="sub">none</span>
        ) : (
          <>
            <RunStatus status={last.status} /> <time dateTime={last.started_at}>{ago(Date.parse(last.started_at))}</time>
          </>
        )}
      </td>
    </tr>
  );
}
