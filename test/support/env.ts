/** A variable `npm test` sets for this run (database, NATS, run id); a clear error when the test was started otherwise. */
export function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with npm test`);
  return v;
}
