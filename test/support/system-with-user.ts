import { Emitter } from '../events.helpers';
import { client, createUser, TestUser } from './accounts';
import { AppName, startSystem, System } from './system';

/** A system, one user of it and that user's client. */
export interface SystemWithUser {
  system: System;
  user: TestUser;
  api: ReturnType<typeof client>;
}

/**
 * The fixture of a describe block: a system of `apps` (all of them unless named), started with `env` on top of the
 * defaults before the block's tests and stopped after them, and one user of it. Its fields are set once its beforeAll
 * has run; a later beforeAll may build on them.
 */
export function systemWithUser(env: Record<string, string> = {}, apps?: AppName[]): SystemWithUser {
  const fixture = {} as SystemWithUser;
  beforeAll(async () => {
    fixture.system = await startSystem(env, { apps });
    fixture.user = createUser(fixture.system);
    fixture.api = client(fixture.system, fixture.user.apiKey);
  });
  afterAll(async () => {
    await fixture.system?.stop();
  });
  return fixture;
}

/** systemWithUser for tests that need only the api (no runner, no delivery). */
export const apiOnlySystem = (env: Record<string, string> = {}): SystemWithUser => systemWithUser(env, ['api']);

/** apiOnlySystem with an Emitter that publishes events to its EMITS as the runner does, closed after the block's tests. */
export function apiOnlySystemWithEmitter(env: Record<string, string> = {}): SystemWithUser & { emitter: Emitter } {
  const fixture = apiOnlySystem(env) as SystemWithUser & { emitter: Emitter };
  beforeAll(async () => {
    fixture.emitter = await Emitter.connect(fixture.system);
  });
  afterAll(async () => {
    await fixture.emitter?.close();
  });
  return fixture;
}
