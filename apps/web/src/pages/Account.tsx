import { useState } from 'preact/hooks';
import { api } from '../api';
import { when } from '../format';
import { session } from '../session';
import type { Me } from '../types';
import { ErrorNote, useLoad } from '../components/ui';
import { UsageChart, UsageTable } from '../components/UsageChart';
import { duration } from '../components/usage-scale';

const PERIODS = [7, 30, 90];

/** A labelled bar of used against quota, drawn in SVG (no chart library). */
function Usage({ id, label, used, quota, unit }: { id: string; label: string; used: number; quota: number; unit: string }) {
  const share = quota > 0 ? Math.min(1, used / quota) : 0;
  const pct = Math.round(share * 100);
  return (
    <div class="usage">
      <div class="usage__head">
        <span id={id}>{label}</span>
        <span>
          {used.toLocaleString()} / {quota.toLocaleString()} {unit} ({pct} %)
        </span>
      </div>
      <svg class="usage__bar" viewBox="0 0 100 6" preserveAspectRatio="none" role="meter" aria-labelledby={id} aria-valuemin={0} aria-valuemax={quota} aria-valuenow={used} aria-valuetext={`${used} of ${quota} ${unit}`}>
        <rect class="usage__track" x="0" y="0" width="100" height="6" rx="1" />
        <rect class={share >= 0.9 ? 'usage__fill usage__fill--high' : 'usage__fill'} x="0" y="0" width={share * 100} height="6" rx="1" />
      </svg>
    </div>
  );
}

/** Invocations and compute time per UTC day of the workspace (you, or the org chosen in the header), against the daily quotas. */
function UsagePerDay({ me }: { me: Me }) {
  const [days, setDays] = useState(30);
  const usage = useLoad(() => api.usage(days), [days]);
  const u = usage.data;
  const orgId = session.org();
  const org = me.orgs?.find((o) => o.id === orgId);
  const whose = orgId ? `the organization ${org?.name ?? org?.orgname ?? orgId}` : 'your account';
  return (
    <div class="card" aria-busy={usage.loading}>
      <h2>Usage per day</h2>
      <div class="usage-period">
        <label for="usage-days" class="inline">
          Period
        </label>
        <select id="usage-days" value={String(days)} onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}>
          {PERIODS.map((n) => (
            <option key={n} value={String(n)}>
              last {n} days
            </option>
          ))}
        </select>
        <span class="hint">UTC days, today last; {whose}.</span>
      </div>
      <ErrorNote error={usage.error} />
      {u ? (
        <>
          <div class="charts">
            <UsageChart id="chart-invocations" title="Invocations" days={u.days} pick={(d) => d.invocations} quota={u.daily_invocations_quota} format={(v) => v.toLocaleString()} />
            <UsageChart id="chart-compute" title="Compute time" days={u.days} pick={(d) => d.compute_time_ms} quota={u.daily_compute_time_quota} format={duration} />
          </div>
          <UsageTable days={u.days} />
        </>
      ) : null}
    </div>
  );
}

/** GET /v1/users/me: who you are, usage against quotas, your orgs, a hint of the key in use. */
export function AccountPage() {
  const me = useLoad(() => api.me(), []);
  const m = me.data;
  return (
    <section aria-labelledby="account-title">
      <h1 id="account-title">Account</h1>
      <ErrorNote error={me.error} />
      {m ? (
        <>
          <div class="card">
            <h2>{m.username}</h2>
            <dl class="facts">
              <dt>Email</dt>
              <dd>{m.email}</dd>
              <dt>User id</dt>
              <dd class="mono">{m.id}</dd>
              <dt>API key in use</dt>
              <dd class="mono">{session.keyHint()}</dd>
            </dl>
          </div>
          <div class="card">
            <h2>Usage</h2>
            {m.daily_invocations_quota !== undefined ? (
              <>
                <p class="hint">Today (UTC){session.org() ? ', your own account' : ''}. Quotas reset at midnight UTC.</p>
                <Usage id="usage-invocations" label="Invocations" used={m.daily_invocations_used ?? 0} quota={m.daily_invocations_quota} unit="invocations" />
                {m.daily_compute_time_quota !== undefined ? <Usage id="usage-compute" label="Compute time" used={m.daily_compute_time_used ?? 0} quota={m.daily_compute_time_quota} unit="ms" /> : null}
              </>
            ) : (
              <dl class="facts">
                <dt>Billing period</dt>
                <dd>{m.billing_period_start_ts ? `${when(m.billing_period_start_ts * 1000)} – ${when((m.billing_period_end_ts ?? 0) * 1000)}` : '—'}</dd>
                <dt>Invocations this period</dt>
                <dd>{(m.billing_period_invocations ?? 0).toLocaleString()}</dd>
                <dt>Quota</dt>
                <dd>none (paid plan)</dd>
              </dl>
            )}
          </div>
          <UsagePerDay me={m} />
          <div class="card">
            <h2>Organizations</h2>
            {m.orgs?.length ? (
              <ul>
                {m.orgs.map((o) => (
                  <li key={o.id}>
                    {o.name ?? o.orgname ?? o.id} <span class="sub mono">{o.id}</span>
                  </li>
                ))}
              </ul>
            ) : (
              <p class="sub">You belong to no organization.</p>
            )}
          </div>
        </>
      ) : null}
    </section>
  );
}
