import { systemWithUser } from './support/system-with-user';
import { desiredState } from './support/components';
import { sql } from './events.helpers';
import { eventually } from './support/system';

/**
 * A `secret: true` prop with `withLabel: true` chosen in Pipedream's label-value form (`{ "__lv": { label, value } }`)
 * keeps `{ label, value }`: that object, not only a string, is the secret, encrypted at rest and in the desired state.
 */
const LABELLED = `export default {
  key: "labelled-secret",
  name: "Labelled Secret",
  version: "0.0.1",
  type: "source",
  props: { token: { type: "string", secret: true, withLabel: true } },
  async run() { this.$emit({ label: this.token.label, value: this.token.value }); },
};`;

describe('sources: a labelled (withLabel) secret prop', () => {
  const ctx = systemWithUser();

  it('stores { label, value } encrypted, answers the mask, and the run reads both', async () => {
    const created = await ctx.api.post('/sources', { component_code: LABELLED, configured_props: { token: { __lv: { label: 'Work key', value: 'labelled-secret-1' } } } });
    expect([created.status, created.body.data?.configured_props]).toEqual([200, { token: '********' }]);
    const id = created.body.data.id;
    const [row] = await sql<{ configured_props: unknown }>(ctx.system, 'select configured_props from sources where id = $1', [id]);
    expect(JSON.stringify(row.configured_props)).not.toContain('labelled-secret-1');
    const state = await eventually(() => desiredState(ctx.system, id), { what: 'the desired state' });
    expect(JSON.stringify(state)).not.toContain('labelled-secret-1');

    expect((await ctx.api.post(`/sources/${id}/run`, { event: {} })).status).toBe(202);
    const [event] = await eventually(async () => {
      const data = (await ctx.api.get(`/sources/${id}/event_summaries?expand=event`)).body?.data ?? [];
      return data.length ? data : undefined;
    }, { what: 'the emitted event' });
    expect(event.event).toEqual({ label: 'Work key', value: 'labelled-secret-1' });
  });

  it('keeps a labelled value through updates: without configured_props, and with the mask sent back', async () => {
    const created = await ctx.api.post('/sources', { component_code: LABELLED, configured_props: { token: { __lv: { label: 'Work key', value: 'labelled-secret-2' } } } });
    const { id, component_id } = created.body.data;
    const off = await ctx.api.put(`/sources/${id}`, { component_id, active: false });
    expect([off.status, off.body.data?.active, off.body.error]).toEqual([200, false, undefined]);
    const masked = await ctx.api.put(`/sources/${id}`, { component_id, configured_props: { token: '********' } });
    expect([masked.status, masked.body.data?.configured_props, masked.body.error]).toEqual([200, { token: '********' }, undefined]);
    expect((await ctx.api.post(`/sources/${id}/run`, { event: {} })).status).toBe(202);
    const [event] = await eventually(async () => {
      const data = (await ctx.api.get(`/sources/${id}/event_summaries?expand=event`)).body?.data ?? [];
      return data.length ? data : undefined;
    }, { what: 'the emitted event' });
    expect(event.event).toEqual({ label: 'Work key', value: 'labelled-secret-2' });
  });
});
