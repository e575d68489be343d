import { apiOnlySystem } from './support/system-with-user';
import { TIMER_SOURCE } from './support/components';

/** Every minute, hour, day, month and weekday written out: the longest cron anyone needs (386 characters). */
const LONGEST_USEFUL = [
  Array.from({ length: 60 }, (_, i) => i).join(','),
  Array.from({ length: 24 }, (_, i) => i).join(','),
  Array.from({ length: 31 }, (_, i) => i + 1).join(','),
  Array.from({ length: 12 }, (_, i) => i + 1).join(','),
  Array.from({ length: 7 }, (_, i) => i).join(','),
].join(' ');
/** A cron as long as a prop value may be (64 KB): it fires every hour, but each read of it costs a parse of 20,000 values. */
const HUGE = `${Array.from({ length: 20_000 }, (_, i) => i % 60).join(',')} * * * *`;

/**
 * A timer's cron is parsed whenever its source is shown (its `interval_seconds` is worked out from the next two
 * firings): a cron as long as a prop value may be cost 7 ms of the api's thread each time, a page of 100 such
 * sources most of a second, for every tenant waiting on that api. A cron is at most 1,000 characters.
 */
describe('timer crons: bounded length', () => {
  const ctx = apiOnlySystem();

  it('refuses a cron longer than 1,000 characters on create, update and in a workflow, and takes every useful one', async () => {
    expect(LONGEST_USEFUL.length).toBeLessThan(1000);
    const ok = await ctx.api.post('/sources', { component_code: TIMER_SOURCE, configured_props: { timer: { cron: LONGEST_USEFUL } } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.configured_props.timer).toEqual({ cron: LONGEST_USEFUL, interval_seconds: 60 });

    const refusal = { error: 'configured_props.timer: cron must be at most 1000 characters', code: 'invalid_props', details: { prop: 'timer' } };
    const created = await ctx.api.post('/sources', { component_code: TIMER_SOURCE, configured_props: { timer: { cron: HUGE } } });
    expect({ status: created.status, body: created.body }).toEqual({ status: 400, body: refusal });
    const updated = await ctx.api.put(`/sources/${ok.body.data.id}`, { component_id: ok.body.data.component_id, configured_props: { timer: { cron: HUGE } } });
    expect({ status: updated.status, body: updated.body }).toEqual({ status: 400, body: refusal });

    const flow = await ctx.api.post('/workflows', { name: 'w', trigger: { timer: { cron: HUGE } }, steps: [{ name: 's', code: 'export default { async run() {} }' }] });
    expect(flow.status).toBe(400);
    expect(flow.body.error).toMatch(/cron must be at most 1000 characters/);
  });
});
