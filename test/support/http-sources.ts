import { client, TestUser } from './accounts';
import { eventually, System } from './system';

/** Deploys `code` (a source with an HTTP interface) as `user`'s own source, expecting 200: its id and endpoint URL. */
export async function deployHttpSource(system: System, user: TestUser, code: string): Promise<{ id: string; url: string }> {
  const res = await client(system, user.apiKey).post('/sources', { component_code: code });
  expect(res.status).toBe(200);
  return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
}

/** POSTs `body` as JSON to an endpoint until it answers 200 (one just deployed may not be routed yet), for up to 60 s. */
export function postUntilOk(url: string, body: unknown = {}): Promise<Response> {
  return eventually(
    async () => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return r.status === 200 ? r : undefined;
    },
    { what: `${url} to answer`, timeoutMs: 60_000 },
  );
}
