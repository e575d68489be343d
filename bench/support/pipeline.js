'use strict';
// The benchmarked pipeline's setup, shared by the end-to-end benchmarks: a user,
// a webhook to the receiver (its signatures checked), `count` HTTP sources
// running `code`, a `dc_*` subscription, and a warm-up until every source delivers.
const { api, createUser, until } = require('./system');
const { closedLoop } = require('./load');

/** The source of the peers pipeline: its `run` emits the request's body. */
const FORWARDER = `export default {
  name: "Forwarder", version: "1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit(event.body); },
};`;

/** The system's settings for the peers pipeline: the per-tenant rate bounds off (Node-RED has none), the rest defaults. */
const PIPELINE_SYSTEM_ENV = { PARTITIONS: '32', HTTP_RATE_PER_SEC: '0', EMITS_PER_SECOND_PER_ACCOUNT: '0', EMITS_BYTES_PER_SECOND_PER_ACCOUNT: '0' };

async function deployPipeline(system, receiver, { count, code, name = 'src' }) {
  const user = createUser(system);
  const client = api(system, user.apiKey);
  const hook = (await client.post('/webhooks', { url: receiver.url })).body.data;
  receiver.verifyWith(hook.secret);
  const urls = [];
  for (let i = 0; i < count; i++) {
    const res = await client.post('/sources', { component_code: code, name: `${name}${i}` });
    if (res.status !== 200) throw new Error(`creating a source failed: ${JSON.stringify(res.body)}`);
    urls.push(res.body.data.configured_props.http.endpoint_url);
  }
  await client.post('/subscriptions', { emitter_id: 'dc_*', listener_id: hook.id });
  let warm = -1_000_000;
  await until(async () => {
    receiver.reset();
    await closedLoop({ urls, connections: urls.length, requests: urls.length, firstN: (warm -= 1000) });
    await new Promise((r) => setTimeout(r, 1000));
    return receiver.receipts.size >= urls.length;
  }, { what: 'every source to deliver', intervalMs: 500 });
  receiver.reset();
  return { urls, hook, client };
}

module.exports = { deployPipeline, FORWARDER, PIPELINE_SYSTEM_ENV };
