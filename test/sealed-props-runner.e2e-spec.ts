import { encryptValue } from '@app/contracts';
import { sql } from './events.helpers';
import { eventually } from './support/system';
import { postUntilOk } from './support/http-sources';
import { systemWithUser } from './support/system-with-user';

/**
 * The runner decrypts a prop's value only where the platform seals one: a secret prop's value and an app's `$auth`.
 * A value of the encrypted form anywhere else — inside a plain prop's object, in a row stored before such values
 * were refused — is data: the code gets it as stored, even when it opens with the platform's key.
 */
const PROPS = '{ o: { type: "object" }, s: { type: "string", secret: true } }';
const SOURCE = `module.exports = { name: "Sealed", version: "1", props: { ...${PROPS}, http: "$.interface.http" }, async run() { this.$emit({ o: this.o, s: this.s === "secret-1" }); } };`;
const STEP = `export default defineComponent({ props: ${PROPS}, async run() { return { o: this.o, s: this.s === "secret-1" }; } });`;

describe('values of the encrypted form outside the places the platform seals', () => {
  const ctx = systemWithUser({ RECONCILE_INTERVAL_MS: '200' });
  /** A real ciphertext of the platform's key, nested in a plain prop's object. */
  const nested = () => ({ inner: encryptValue(Buffer.from(ctx.system.env.SECRETS_KEY, 'hex'), 'opened-by-the-runner') });

  it("a source's code gets the nested value as stored, its secret prop decrypted", async () => {
    const created = await ctx.api.post('/sources', { component_code: SOURCE, configured_props: { o: { before: true }, s: 'secret-1' } });
    expect(created.status).toBe(200);
    const { id } = created.body.data;
    const url = created.body.data.configured_props.http.endpoint_url as string;
    const stored = nested();
    // Republished by the api's reconciler, as any source whose revision its published one lags.
    await sql(ctx.system, `update sources set configured_props = configured_props || $2::jsonb, rev = rev + 1 where id = $1`, [id, JSON.stringify({ o: stored })]);
    const event = await eventually(async () => {
      await postUntilOk(url);
      const data = (await ctx.api.get(`/sources/${id}/event_summaries?limit=1`)).body.data as { event: { o: Record<string, unknown>; s: boolean } }[];
      return data[0]?.event.o.before ? undefined : data[0]?.event;
    }, { what: 'a run with the props set by SQL', timeoutMs: 60_000, intervalMs: 500 });
    expect(event).toEqual({ o: stored, s: true });
  });

  it("a workflow step's code gets the nested value as stored, its secret prop decrypted", async () => {
    const created = await ctx.api.post('/workflows', { name: 'sealed', trigger: { manual: {} }, steps: [{ name: 'one', code: STEP, props: { o: { before: true }, s: 'secret-1' } }] });
    expect(created.status).toBe(200);
    const { id } = created.body.data;
    const stored = nested();
    await sql(ctx.system, `update workflows set steps = jsonb_set(steps, '{0,props,o}', $2::jsonb), rev = rev + 1 where id = $1`, [id, JSON.stringify(stored)]);
    const returned = await eventually(async () => {
      expect((await ctx.api.post(`/workflows/${id}/run`, { event: {} })).status).toBe(202);
      const runs = (await ctx.api.get(`/workflows/${id}/runs?limit=1`)).body.data as { steps: { return_value: { o: Record<string, unknown> } }[] }[];
      const value = runs[0]?.steps[0]?.return_value;
      return value && !value.o.before ? value : undefined;
    }, { what: 'a run with the props set by SQL', timeoutMs: 60_000, intervalMs: 1000 });
    expect(returned).toEqual({ o: stored, s: true });
  });
});
