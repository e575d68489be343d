import { createHash } from 'node:crypto';
import { client, createUser } from './support/accounts';
import { HTTP_SOURCE } from './support/components';
import { startSystem, System } from './support/system';

const MiB = 1024 * 1024;

/** A component of many small functions, with quotes and backslashes (escaped in SQL as ' → '' and \ → \\), near `bytes`. */
function bigComponent(bytes: number): string {
  const tail = `module.exports = { name: "Big", key: "big", version: "1", props: { s: { type: "string", label: "It's \\\\ big" } }, async run() { this.$emit(f0("1")); } };\n`;
  const parts: string[] = [];
  let size = tail.length;
  for (let n = 0; size + 100 < bytes; n++) {
    const f = `function f${n}(s) { return s.replace(/\\d+/g, 'it\\'s ${n}') + "\\\\"; }\n`;
    parts.push(f);
    size += f.length;
  }
  return parts.join('') + tail;
}

// What another account sees while one account saves a component at COMPONENT_MAX_BYTES: its API calls and its HTTP
// source's endpoint are answered during the save, not after it. (The old build answered them first too, after waits of
// up to seconds while the api's event loop was held: those waits are measured in docs/benchmarks.md, not asserted.)
describe('saving a 5 MiB component', () => {
  let system: System;

  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("answers another account's requests before the save's answer, and stores the code as sent", async () => {
    const saver = client(system, createUser(system).apiKey);
    const other = client(system, createUser(system).apiKey);
    const source = await other.post('/sources', { component_code: HTTP_SOURCE, name: 'other-http' });
    expect(source.status).toBe(200);
    const endpoint = source.body.data.configured_props.http.endpoint_url as string;
    const code = bigComponent(5 * MiB - 64 * 1024);
    expect(code.length).toBeGreaterThan(4.9 * MiB);

    const order: string[] = [];
    const saving = saver.post('/components', { component_code: code }).then((r) => {
      order.push('save');
      return r;
    });
    // One request after another, each sent when the previous was answered, until the save has answered.
    for (let i = 0; i < 10 && !order.includes('save'); i++) {
      const me = await other.get('/users/me');
      expect(me.status).toBe(200);
      order.push('me');
      const hit = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"i":1}' });
      expect(hit.status).toBe(200);
      order.push('endpoint');
    }
    const saved = await saving;
    expect(saved.status).toBe(200);
    expect(order.indexOf('save')).toBe(order.length - 1);
    expect(order.filter((x) => x !== 'save')).toEqual(Array.from({ length: 10 }, () => ['me', 'endpoint']).flat());

    const got = await saver.get(`/components/${saved.body.data.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.code).toBe(code);
    expect(got.body.data.code_hash).toBe(createHash('sha256').update(code).digest('hex'));
  });
});
