import { apiOnlySystem } from './support/system-with-user';

const CODE = `module.exports = { name: "Lists", version: "0.0.1", props: {
  tags: { type: "string[]", optional: true, options: ["a", "b"] },
  counts: { type: "integer[]", optional: true, min: 1, max: 5 },
}, async run() {} };`;
const STEP = `export default defineComponent({ props: { tags: { type: "string[]", optional: true } }, async run() { return this.tags; } })`;

/**
 * docs/api.md: an invalid_props error's details.prop names the prop. For an element of an array prop it named the
 * element (`tags[1]`), no prop of the component; the element is details.path, beside the prop's name.
 */
describe('invalid_props of an array element', () => {
  const ctx = apiOnlySystem();

  it('names the prop in details.prop and the element in details.path', async () => {
    const id = (await ctx.api.post('/components', { component_code: CODE })).body.data.id as string;
    const cases: [Record<string, unknown>, string, string, string][] = [
      [{ tags: ['a', 1] }, 'tags', 'tags[1]', 'configured_props.tags[1]: must be a string, got 1'],
      [{ tags: ['a', 'c'] }, 'tags', 'tags[1]', 'configured_props.tags[1]: "c" is not one of the options: "a", "b"'],
      [{ counts: [1, 2, 9] }, 'counts', 'counts[2]', 'configured_props.counts[2]: must be at most 5, got 9'],
    ];
    for (const [props, prop, path, error] of cases) {
      const res = await ctx.api.post('/sources', { component_id: id, configured_props: props });
      expect([res.status, res.body]).toEqual([400, { error, code: 'invalid_props', details: { prop, path } }]);
    }
    // A whole prop's error names only the prop, as before.
    const whole = await ctx.api.post('/sources', { component_id: id, configured_props: { tags: 'a' } });
    expect([whole.status, whole.body.details]).toEqual([400, { prop: 'tags' }]);
  });

  it("keeps a workflow step's path to the element", async () => {
    const res = await ctx.api.post('/workflows', { name: 'lists', trigger: { manual: {} }, steps: [{ name: 's1', code: STEP, props: { tags: ['a', 2] } }] });
    expect([res.status, res.body.code, res.body.details?.path]).toEqual([400, 'invalid_workflow', 'steps[0].props.tags[1]']);
  });
});
