import { request } from 'node:http';
import { client, createUser } from './support/accounts';
import { eventually, startSystem, System } from './support/system';

/**
 * What a caller of `/e/<key>` gets for each kind of value a component gives `this.http.respond({ status, headers, body })`.
 * A header value that is an object reached the client as the text `[object Object]` (a function as its source, a symbol
 * as `Symbol(x)`, `null` in a list as `null`); a list was one header joined with `, ` where Node's setHeader repeats it;
 * an ArrayBuffer or a TypedArray other than Uint8Array was sent as the JSON of its indexes (`{}`, `{"0":1}`), a function
 * body as an empty `application/json` one; a Map of headers was taken as no headers; and a Content-Type the component
 * gave was changed by the api (`; charset=utf-8` added to a JSON type with a text body, one it could not parse replaced),
 * and with a text body a header's characters from U+0080 to U+00FF were sent as UTF-8 (`café` read as `cafÃ©`).
 * Now each value is sent as the component wrote it, or `respond()` throws a TypeError or RangeError in the run: the
 * caller gets the documented `502 source_error` naming it, never a 500, and the api and the runner go on answering.
 */
const CASES = `{
  scalars: () => ({ status: "201", headers: { "x-num": 42, "x-bool": false, "x-big": 10n, "x-str": "as given; q=1", "x-latin1": "caf\\u00e9", "x-null": null, "x-undef": undefined, "x-none": [] }, body: "hi" }),
  lists: () => ({ status: 200, headers: { "x-list": ["a", 1, true], "set-cookie": ["a=1", "b=2"], vary: ["Origin"] } }),
  jsonType: () => ({ status: 200, headers: { "Content-Type": "application/json" }, body: JSON.stringify({ a: 1 }) }),
  oddType: () => ({ status: 200, headers: { "content-type": "weird" }, body: "odd" }),
  twoTypes: () => ({ status: 200, headers: { "content-type": ["text/plain", "text/html"] }, body: "two" }),
  object: () => ({ status: 200, body: { a: [1, "x"] } }),
  array: () => ({ status: 200, body: [1, 2] }),
  number: () => ({ status: 200, body: 0 }),
  typedJson: () => ({ status: 200, headers: { "content-type": "application/vnd.api+json" }, body: { data: null } }),
  nullBody: () => ({ status: 200, body: null }),
  noBody: () => ({ status: 202 }),
  buffer: () => ({ status: 200, body: Buffer.from([0, 255, 1]) }),
  uint8: () => ({ status: 200, body: new Uint8Array([104, 105]) }),
  arrayBuffer: () => ({ status: 200, body: new Uint8Array([111, 107]).buffer }),
  int16: () => ({ status: 200, body: new Int16Array([0x6968]) }),
  noContent: () => ({ status: 204, headers: { "content-type": "text/plain" }, body: "dropped" }),
  notModified: () => ({ status: 304, headers: { etag: '"v1"' }, body: "dropped" }),
  informational: () => ({ status: 103, headers: { link: "</a.css>; rel=preload" }, body: "never" }),
  sameName: () => ({ status: 200, headers: { "X-Dup": "first", "x-dup": "second", "connection": "close", "content-length": "999", "keep-alive": "timeout=1" }, body: "one" }),
  objectValue: () => ({ status: 200, headers: { "x-a": { b: 1 } }, body: "no" }),
  functionValue: () => ({ status: 200, headers: { "x-a": () => 1 }, body: "no" }),
  symbolValue: () => ({ status: 200, headers: { "x-a": Symbol("s") }, body: "no" }),
  nullInList: () => ({ status: 200, headers: { "set-cookie": ["a=1", null] }, body: "no" }),
  nestedList: () => ({ status: 200, headers: { "x-a": [["a", "b"]] }, body: "no" }),
  crlf: () => ({ status: 200, headers: { "x-a": "one\\r\\nset-cookie: x=1" }, body: "no" }),
  nul: () => ({ status: 200, headers: { "x-a": "a\\u0000b" }, body: "no" }),
  notLatin1: () => ({ status: 200, headers: { "x-a": "\\u20ac" }, body: "no" }),
  badName: () => ({ status: 200, headers: { "x a": "1" }, body: "no" }),
  mapHeaders: () => ({ status: 200, headers: new Map([["x-a", "1"]]), body: "no" }),
  throwingGetter: () => ({ status: 200, headers: { get "x-a"() { throw new Error("getter said no"); } }, body: "no" }),
  status99: () => ({ status: 99 }),
  status600: () => ({ status: 600 }),
  status1e3: () => ({ status: 1e3 }),
  statusFraction: () => ({ status: 200.5 }),
  statusExponent: () => ({ status: "2e2" }),
  statusBigint: () => ({ status: 200n }),
  functionBody: () => ({ status: 200, body: () => 1 }),
  bigintBody: () => ({ status: 200, body: 1n }),
}`;
const SOURCE = `const cases = ${CASES};
module.exports = { name: "Respond values", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.http.respond(cases[event.query.c]()); } };`;

interface Answer {
  status: number;
  /** Every header line as sent: [name in lower case, value]. */
  lines: [string, string][];
  body: Buffer;
}

function get(url: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const lines: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push([res.rawHeaders[i].toLowerCase(), res.rawHeaders[i + 1]]);
        resolve({ status: res.statusCode ?? 0, lines, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

const valuesOf = (a: Answer, name: string): string[] => a.lines.filter(([n]) => n === name).map(([, v]) => v);

describe('respond() values a component gives, as the caller gets them', () => {
  let system: System;
  let url: string;
  beforeAll(async () => {
    system = await startSystem({ HTTP_RATE_PER_SEC: '0' }, { apps: ['api', 'runner'] });
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/sources', { component_code: SOURCE });
    expect(res.status).toBe(200);
    url = res.body.data.configured_props.http.endpoint_url as string;
    await eventually(async () => (await get(`${url}?c=noBody`)).status === 202, { what: 'the endpoint', timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await system?.stop();
  });

  const answer = (c: string, method?: string): Promise<Answer> => get(`${url}?c=${c}`, method);

  it('header values: a string as given, a number, boolean or bigint as its text; null, undefined and [] leave the header out; a numeric string status is taken', async () => {
    const a = await answer('scalars');
    expect([a.status, a.body.toString()]).toEqual([201, 'hi']);
    expect(['x-num', 'x-bool', 'x-big', 'x-str', 'x-latin1'].map((n) => valuesOf(a, n))).toEqual([['42'], ['false'], ['10'], ['as given; q=1'], ['café']]);
    expect(['x-null', 'x-undef', 'x-none'].flatMap((n) => valuesOf(a, n))).toEqual([]);
    expect(valuesOf(a, 'content-type')).toEqual(['text/plain; charset=utf-8']);
  });

  it('a list is that header repeated, one line per value (Set-Cookie too, each kept under the endpoint path)', async () => {
    const a = await answer('lists');
    expect(a.status).toBe(200);
    expect(valuesOf(a, 'x-list')).toEqual(['a', '1', 'true']);
    expect(valuesOf(a, 'set-cookie').map((c) => c.split(';')[0])).toEqual(['a=1', 'b=2']);
    expect(valuesOf(a, 'vary')).toEqual(['Origin']);
  });

  it("the component's Content-Type is sent as written, parsed by no one: a JSON type, one that is no media type, a list", async () => {
    const json = await answer('jsonType');
    expect([valuesOf(json, 'content-type'), JSON.parse(json.body.toString())]).toEqual([['application/json'], { a: 1 }]);
    const odd = await answer('oddType');
    expect([valuesOf(odd, 'content-type'), odd.body.toString()]).toEqual([['weird'], 'odd']);
    const two = await answer('twoTypes');
    expect([valuesOf(two, 'content-type'), two.body.toString()]).toEqual([['text/plain', 'text/html'], 'two']);
  });

  it('body: a value is JSON (application/json; charset=utf-8 unless a Content-Type was given), binary data its bytes (application/octet-stream), null or none an empty body without a type', async () => {
    const json = async (c: string): Promise<[string[], string]> => {
      const a = await answer(c);
      return [valuesOf(a, 'content-type'), a.body.toString()];
    };
    expect(await json('object')).toEqual([['application/json; charset=utf-8'], '{"a":[1,"x"]}']);
    expect(await json('array')).toEqual([['application/json; charset=utf-8'], '[1,2]']);
    expect(await json('number')).toEqual([['application/json; charset=utf-8'], '0']);
    expect(await json('typedJson')).toEqual([['application/vnd.api+json'], '{"data":null}']);
    for (const c of ['nullBody', 'noBody']) {
      const a = await answer(c);
      expect([c, a.status, valuesOf(a, 'content-type'), valuesOf(a, 'content-length'), a.body.length]).toEqual([c, c === 'noBody' ? 202 : 200, [], ['0'], 0]);
    }
    const bytes = async (c: string): Promise<[string[], number[]]> => {
      const a = await answer(c);
      return [valuesOf(a, 'content-type'), [...a.body]];
    };
    expect(await bytes('buffer')).toEqual([['application/octet-stream'], [0, 255, 1]]);
    expect(await bytes('uint8')).toEqual([['application/octet-stream'], [104, 105]]);
    expect(await bytes('arrayBuffer')).toEqual([['application/octet-stream'], [111, 107]]);
    expect(await bytes('int16')).toEqual([['application/octet-stream'], [...Buffer.from(new Int16Array([0x6968]).buffer)]]);
    const none = await answer('noContent');
    expect([none.status, valuesOf(none, 'content-type'), none.body.length]).toEqual([204, [], 0]);
    const notModified = await answer('notModified');
    expect([notModified.status, valuesOf(notModified, 'etag'), notModified.body.length]).toEqual([304, ['"v1"'], 0]);
    const head = await answer('scalars', 'HEAD');
    expect([head.status, valuesOf(head, 'x-num'), head.body.length]).toEqual([201, ['42'], 0]);
  });

  it('one name spelt twice is sent once, the last value; the framing and hop-by-hop headers are the server\'s own', async () => {
    const a = await answer('sameName');
    expect([a.status, valuesOf(a, 'x-dup'), valuesOf(a, 'content-length'), a.body.toString()]).toEqual([200, ['second'], ['3'], 'one']);
    expect([valuesOf(a, 'connection'), valuesOf(a, 'keep-alive')]).toEqual([['keep-alive'], [expect.not.stringMatching(/^timeout=1$/)]]);
  });

  it('an informational (1xx) status, which cannot end an exchange, is answered 502 bad_gateway by the api', async () => {
    const a = await answer('informational');
    expect([a.status, JSON.parse(a.body.toString()), valuesOf(a, 'link')]).toEqual([502, { error: 'the source responded with status 103: an informational (1xx) status cannot be the final response', code: 'bad_gateway' }, []]);
  });

  it("a value HTTP cannot carry, a status out of range or a body with no JSON text is the run's error from respond(): the caller gets 502 source_error naming it, and the api and the runner go on", async () => {
    const refused: [string, RegExp][] = [
      ['objectValue', /^respond\(\): header "x-a": a value must be a string, a number or a boolean, or a list of them; got an object$/],
      ['functionValue', /respond\(\): header "x-a": .* got a function$/],
      ['symbolValue', /respond\(\): header "x-a": .* got a symbol$/],
      ['nullInList', /respond\(\): header "set-cookie": .* got null$/],
      ['nestedList', /respond\(\): header "x-a": .* got a list$/],
      ['crlf', /respond\(\): invalid header "x-a": Invalid character in header content/],
      ['nul', /respond\(\): invalid header "x-a": Invalid character in header content/],
      ['notLatin1', /respond\(\): invalid header "x-a": Invalid character in header content/],
      ['badName', /respond\(\): invalid header "x a": Header name must be a valid HTTP token/],
      ['mapHeaders', /respond\(\): headers must be an object of names and values, got a Map \(Object\.fromEntries\(\) makes one of it\)$/],
      ['throwingGetter', /getter said no$/],
      ['status99', /respond\(\): status must be an integer from 100 to 599, got 99$/],
      ['status600', /got 600$/],
      ['status1e3', /got 1000$/],
      ['statusFraction', /got 200\.5$/],
      ['statusExponent', /got "2e2"$/],
      ['statusBigint', /got a bigint$/],
      ['functionBody', /respond\(\): body must be a string, a Buffer \(or other binary data\), or a value sent as JSON; got a function that has no JSON text$/],
      ['bigintBody', /respond\(body\): the value is not JSON-serializable/],
    ];
    for (const [c, message] of refused) {
      const a = await answer(c);
      const body = JSON.parse(a.body.toString()) as { error: string; code: string };
      expect([c, a.status, body.code, valuesOf(a, 'content-type'), valuesOf(a, 'cache-control')]).toEqual([c, 502, 'source_error', ['application/json; charset=utf-8'], ['no-store']]);
      expect([c, body.error]).toEqual([c, expect.stringMatching(/^the source failed before responding: /)]);
      expect([c, body.error.replace('the source failed before responding: ', '')]).toEqual([c, expect.stringMatching(message)]);
      expect(a.lines.some(([, v]) => v.includes('[object Object]'))).toBe(false);
    }
    const after = await answer('scalars');
    expect([after.status, after.body.toString()]).toEqual([201, 'hi']);
    expect((await fetch(`${system.origin}/healthz`)).status).toBe(200);
  });
});
