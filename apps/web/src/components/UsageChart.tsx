import type { UsageDay } from '../types';
import { chartScale, duration } from './usage-scale';

const W_SLOT = 10;
const H = 100;
/** Where the top of the scale sits when the quota line is above it (the line then runs along the upper edge; `.chart__tick--below-quota` in the CSS matches). */
const BELOW_QUOTA = 0.8;

/** A bar chart of one figure per UTC day in inline SVG, with the daily quota as a dashed line; described for screen readers. */
export function UsageChart({ id, title, days, pick, quota, format }: { id: string; title: string; days: UsageDay[]; pick: (d: UsageDay) => number; quota: number | null; format: (v: number) => string }) {
  const values = days.map(pick);
  const { top, quotaOnScale } = chartScale(values, quota);
  const total = values.reduce((a, b) => a + b, 0);
  const maxIdx = values.reduce((best, v, i) => (v > values[best] ? i : best), 0);
  const today = days[days.length - 1];
  const width = Math.max(1, days.length) * W_SLOT;
  const offScale = quota !== null && !quotaOnScale;
  const span = offScale ? BELOW_QUOTA : 1;
  const y = (v: number) => H - (v / top) * H * span;
  const quotaText = quota === null ? 'No daily quota.' : `Daily quota ${format(quota)}${quotaOnScale ? '' : ', above this scale'}.`;
  const desc = days.length
    ? `${title} per UTC day from ${days[0].day} to ${today.day}: total ${format(total)}; highest ${format(values[maxIdx])} on ${days[maxIdx].day}; today ${format(pick(today))}. ${quotaText}`
    : 'No days.';
  return (
    <figure class="chart" aria-labelledby={`${id}-caption`}>
      <figcaption id={`${id}-caption`} class="chart__caption">
        <strong>{title} per day</strong>
        <span class="sub">
          total {format(total)} · today {today ? format(pick(today)) : '—'}
        </span>
      </figcaption>
      <div class="chart__plot">
        <div class="chart__scale" aria-hidden="true">
          {offScale ? <span class="chart__tick chart__tick--quota">{format(quota)}</span> : null}
          <span class={offScale ? 'chart__tick chart__tick--below-quota' : 'chart__tick chart__tick--top'}>{format(top)}</span>
          <span class="chart__tick chart__tick--zero">0</span>
        </div>
        <svg class="chart__svg" viewBox={`0 0 ${width} ${H}`} preserveAspectRatio="none" role="img" aria-labelledby={`${id}-title ${id}-desc`}>
          <title id={`${id}-title`}>{`${title} per day`}</title>
          <desc id={`${id}-desc`}>{desc}</desc>
          <line class="chart__grid" x1="0" x2={width} y1={y(top / 2)} y2={y(top / 2)} vector-effect="non-scaling-stroke" />
          {offScale ? <line class="chart__grid" x1="0" x2={width} y1={y(top)} y2={y(top)} vector-effect="non-scaling-stroke" /> : null}
          <line class="chart__axis" x1="0" x2={width} y1={H} y2={H} vector-effect="non-scaling-stroke" />
          {days.map((d, i) => {
            const v = values[i];
            // A day with any use stays visible however small against the scale.
            const h = v > 0 ? Math.max(2, H - y(v)) : 0;
            return (
              <rect key={d.day} class={quota !== null && v > quota ? 'chart__bar chart__bar--over' : i === days.length - 1 ? 'chart__bar chart__bar--today' : 'chart__bar'} x={i * W_SLOT + 1.5} y={H - h} width={W_SLOT - 3} height={h} data-day={d.day} data-value={v}>
                <title>{`${d.day}: ${format(v)}`}</title>
              </rect>
            );
          })}
          {quota !== null ? <line class="chart__quota" x1="0" x2={width} y1={quotaOnScale ? y(quota) : 0.5} y2={quotaOnScale ? y(quota) : 0.5} vector-effect="non-scaling-stroke" data-quota={quota} /> : null}
        </svg>
      </div>
      <div class="chart__days" aria-hidden="true">
        <span>{days[0]?.day}</span>
        <span>{today?.day}</span>
      </div>
      <p class="chart__legend">
        {quota !== null ? <span class="chart__swatch" aria-hidden="true" /> : null}
        {quotaText}
      </p>
    </figure>
  );
}

/** The same figures as a table, newest day first (for reading exact numbers and for screen readers). */
export function UsageTable({ days }: { days: UsageDay[] }) {
  return (
    <details class="chart-table">
      <summary>Usage per day as a table</summary>
      <div class="table-wrap">
        <table>
          <caption class="sub">Invocations and compute time per UTC day, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col">Invocations</th>
              <th scope="col">Compute time</th>
            </tr>
          </thead>
          <tbody>
            {[...days].reverse().map((d) => (
              <tr key={d.day}>
                <th scope="row" class="mono">
                  {d.day}
                </th>
                <td>{d.invocations.toLocaleString()}</td>
                <td>{duration(d.compute_time_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}
