import { client, createUser } from './support/accounts';
import { startSystem, System } from './support/system';

/**
 * A pin that starts with `.` is a path to npm: `require("x@..")` made the api run `npm install` with a
 * dependency on the server's npm cache directory (`x@.` linked the dependency set to itself), and the
 * error named the server's paths. Now such a pin is refused before anything is installed, like git,
 * URL and file specs.
 */
describe('import pins that npm reads as paths', () => {
  let system: System;
  beforeAll(async () => {
    system = await startSystem({}, { apps: ['api'] });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it.each(['x@..', 'x@.', 'x@.git', 'x@..%2f..', '@s/p@..'])('refuses %s with the pin rule and no server path', async (spec) => {
    const user = createUser(system);
    const res = await client(system, user.apiKey).post('/components', { component_code: `require(${JSON.stringify(spec)}); module.exports = { name: "n", version: "1", props: {}, async run() {} };` });
    expect([res.status, res.body.code]).toEqual([400, 'invalid_component']);
    expect(res.body.error).toMatch(/a version in an import must be an npm version, range or dist-tag/);
    expect(res.text).not.toContain(system.env.DATA_DIR);
  });
});
