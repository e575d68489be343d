import { admin, client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * An HTTP endpoint (`/e/<key>`) takes requests from anyone who knows its URL (docs/operations.md, "Access changes"):
 * removing a member or revoking their key does not change the URLs of the org's sources they saw. Deleting the
 * source (and creating it again, with a new URL) is what shuts them out.
 */
const ECHO = `module.exports = {
  name: "Echo", version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.$emit(event.body); this.http.respond({ status: 200, body: "got " + event.body.n }); },
};`;

describe("an org's HTTP endpoints after a member leaves", () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({ REGISTRY_DIR: 'off' });
  });
  afterAll(async () => system?.stop());

  it('still take the ex-member\'s requests until the source is deleted and created again', async () => {
    const [owner, member] = [createUser(system), createUser(system)];
    const org = admin(system, ['orgs', 'create', '--name', 'Endpoints', '--orgname', `endpoints-${owner.id.slice(2, 12).toLowerCase()}`]);
    for (const u of [owner, member]) admin(system, ['orgs', 'add-member', '--org', org.id, '--user', u.id]);
    const create = async () => (await client(system, owner.apiKey).post(`/sources?org_id=${org.id}`, { component_code: ECHO })).body.data;
    const source = await create();
    const url: string = (await client(system, member.apiKey).get(`/sources/${source.id}`)).body.data.configured_props.http.endpoint_url;
    const post = async (to: string, n: number) => {
      const res = await fetch(to, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      return [res.status, await res.text()];
    };
    await eventually(async () => (await post(url, 0))[0] === 200, { what: 'the source to answer', timeoutMs: 30_000 });

    admin(system, ['orgs', 'remove-member', '--org', org.id, '--user', member.id]);
    admin(system, ['keys', 'revoke', '--user', member.id]);
    expect((await client(system, member.apiKey).get(`/sources/${source.id}`)).status).toBe(401);
    expect(await post(url, 1)).toEqual([200, 'got 1']);

    expect((await client(system, owner.apiKey).del(`/sources/${source.id}`)).status).toBe(204);
    const again = await create();
    expect(again.configured_props.http.endpoint_url).not.toBe(url);
    expect((await post(url, 2))[0]).toBe(404);
  });
});
