/** A variable `npm test` sets for this run (database, NATS, run id); a clear error when the test was started otherwise. */
export function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with npm test`);
  return v;
}

/** How a test talks to the run's NATS server directly: as its admin user (the apps connect as their own users). */
export function natsAdmin(): { servers: string; user: string; pass: string } {
  return { servers: need('TEST_NATS_URL'), user: need('TEST_NATS_USER'), pass: need('TEST_NATS_PASSWORD') };
}

/** The admin user as app settings (for a `NatsService` a test starts itself). */
export function natsAdminEnv(): Record<string, string> {
  return { NATS_URL: need('TEST_NATS_URL'), NATS_USER: need('TEST_NATS_USER'), NATS_PASSWORD: need('TEST_NATS_PASSWORD') };
}
