import { apiOnlySystem } from './support/system-with-user';

/**
 * An update without `configured_props` keeps the values of the props the source still has. A value of a prop that
 * `additionalProps()` added, when the new code adds it no more (or has no `additionalProps()`), goes, as a value of a
 * static prop the new code dropped does.
 */
const version = (n: number, additional: string) => `export default {
  key: "added-props-update", name: "Added Props Update", version: "0.0.${n}", type: "source",
  props: { mode: { type: "string", reloadProps: true } },
  ${additional}
  async run() {},
};`;
const V1 = version(1, 'async additionalProps() { return { extra: { type: "string" } }; },');

describe('sources: an update whose new code no longer adds a prop', () => {
  const ctx = apiOnlySystem();

  it.each([
    ['without additionalProps()', version(2, ''), undefined],
    ['whose additionalProps() adds another prop', version(3, 'async additionalProps() { return { other: { type: "string", optional: true } }; },'), [{ name: 'mode', type: 'string', reloadProps: true }, { name: 'other', type: 'string', optional: true }]],
  ])('keeps the values the new code takes: new code %s', async (_name, code, configurable) => {
    const created = await ctx.api.post('/sources', { component_code: V1, configured_props: { mode: 'm', extra: 'x' } });
    expect([created.status, created.body.data?.configured_props]).toEqual([200, { mode: 'm', extra: 'x' }]);
    const updated = await ctx.api.put(`/sources/${created.body.data.id}`, { component_code: code });
    expect([updated.status, updated.body.error, updated.body.data?.configured_props, updated.body.data?.configurable_props]).toEqual([200, undefined, { mode: 'm' }, configurable]);
  });
});
