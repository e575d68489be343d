import { Emitter } from '../events.helpers';
import { client, createUser, TestUser } from './accounts';
import { startSystem, System } from './system';

/** An api-only system (no runner, no delivery), one user of it and that user's client. */
export interface ApiOnlySystem {
  system: System;
  user: TestUser;
  api: ReturnType<typeof client>;
}

/**
 * The fixture of a describe block whose tests need only the api: started (with `env` on top of the defaults) before
 * its tests and stopped after them. Its fields are set once its beforeAll has run; a later beforeAll may build on them.
 */
export function apiOnlySystem(env: Record<string, string> = {}): ApiOnlySystem {
  const fixture = {} as ApiOnlySystem;
  beforeAll(async () => {
    fixture.system = await startSystem(env, { apps: ['api'] });
    fixture.user = createUser(fixture.system);
    fixture.api = client(fixture.system, fixture.user.apiKey);
  });
  afterAll(async () => {
    await fixture.system?.stop();
  });
  return fixture;
}

/** apiOnlySystem with an Emitter that publishes events to its EMITS as the runner does, closed after the block's tests. */
export function apiOnlySystemWithEmitter(env: Record<string, string> = {}): ApiOnlySystem & { emitter: Emitter } {
  const fixture = apiOnlySystem(env) as ApiOnlySystem & { emitter: Emitter };
  beforeAll(async () => {
    fixture.emitter = await Emitter.connect(fixture.system);
  });
  afterAll(async () => {
    await fixture.emitter?.close();
  });
  return fixture;
}
