import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/** Registry sources verify the webhooks they register: an activate hook that calls the source's own endpoint gets run's answer. */
const VERIFYING_SOURCE = `export default {
  name: "Verifying webhook source",
  version: "0.1.0",
  props: { http: { type: "$.interface.http", customResponse: true }, db: "$.service.db" },
  hooks: {
    async activate() {
      const expected = "c" + Date.now();
      const res = await fetch(this.http.endpoint + "/verify?challenge=" + expected, { method: "POST" });
      this.$emit({ handshake: await res.text(), status: res.status, expected }, { summary: "handshake" });
    },
  },
  async run(event) {
    if (event.path === "/verify") {
      this.db.set("challenge", event.query.challenge);
      this.http.respond({ status: 200, body: event.query.challenge });
      return;
    }
    this.http.respond({ status: 200, body: "ok" });
    this.$emit({ ...event.body, challenge: this.db.get("challenge") });
  },
};`;

describe('HTTP requests to a source while its activate hook runs', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it('are served beside the hook: the hook gets run\'s answer, run\'s db write is kept, later requests run as usual', async () => {
    const user = createUser(system);
    const api = client(system, user.apiKey);
    const created = await api.post('/sources', { component_code: VERIFYING_SOURCE });
    expect(created.status).toBe(200);
    const id: string = created.body.data.id;
    const url: string = created.body.data.configured_props.http.endpoint_url;

    const handshake = await eventually(async () => {
      const res = await api.get(`/sources/${id}/event_summaries?expand=event`);
      return (res.body.data as { event: Record<string, unknown> }[]).find((e) => 'handshake' in e.event)?.event;
    }, { what: 'the handshake event of activate', timeoutMs: 60_000 });
    expect(handshake).toEqual({ handshake: handshake.expected, status: 200, expected: expect.stringMatching(/^c\d+$/) });

    const later = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 1 }) });
    expect(later.status).toBe(200);
    expect(await later.text()).toBe('ok');
    const event = await eventually(async () => {
      const res = await api.get(`/sources/${id}/event_summaries?expand=event`);
      return (res.body.data as { event: Record<string, unknown> }[]).find((e) => e.event.n === 1)?.event;
    }, { what: 'the event of the later request' });
    expect(event).toEqual({ n: 1, challenge: handshake.expected });
  });
});
