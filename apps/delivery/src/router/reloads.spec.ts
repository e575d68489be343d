import { Reloads } from './reloads';

/** Reads that finish when the test says so; `copy` is what the last finished read saw of `rows`. */
function source() {
  const s = { rows: 1, copy: 0, started: 0, finishes: [] as ((error?: Error) => void)[] };
  const read = (): Promise<void> => {
    s.started++;
    const seen = s.rows;
    return new Promise<void>((resolve, reject) => s.finishes.push((error) => (error ? reject(error) : ((s.copy = seen), resolve()))));
  };
  return { s, reloads: new Reloads(read), finish: (error?: Error) => s.finishes.shift()!(error) };
}

/** Whether `p` settled by the time every queued callback ran. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('Reloads', () => {
  it('does not hold readers for a periodic read', async () => {
    const { s, reloads, finish } = source();
    const periodic = reloads.periodic();
    expect(await settled(reloads.current())).toBe(true);
    finish();
    await periodic;
    expect(s.copy).toBe(1);
  });

  it('holds readers until a read that began after the change has finished, even when a periodic read was under way', async () => {
    const { s, reloads, finish } = source();
    void reloads.periodic();
    s.rows = 2; // changed while the periodic read may already have read
    const changed = reloads.changed();
    const current = reloads.current();
    finish(); // the periodic read, with the old rows
    expect(await settled(current)).toBe(false);
    expect(s.started).toBe(2);
    finish();
    await Promise.all([changed, current]);
    expect(s.copy).toBe(2);
  });

  it('serves a periodic read with the read already under way', async () => {
    const { s, reloads, finish } = source();
    const changed = reloads.changed();
    const periodic = reloads.periodic();
    finish();
    await changed;
    expect(await settled(periodic)).toBe(true);
    expect(s.started).toBe(1);
  });

  it('serves every change announced during a read with one more read', async () => {
    const { s, reloads, finish } = source();
    void reloads.changed();
    const later = [reloads.changed(), reloads.changed(), reloads.changed()];
    finish();
    expect(await settled(Promise.all(later))).toBe(false);
    finish();
    await Promise.all(later);
    expect(s.started).toBe(2);
    expect(await settled(reloads.current())).toBe(true);
  });

  it('holds a reader only for the changes announced before it, not for those announced after', async () => {
    const { s, reloads, finish } = source();
    void reloads.changed();
    const current = reloads.current();
    const later = reloads.changed(); // while the first read runs: a second read serves it
    finish();
    expect(await settled(current)).toBe(true);
    expect(await settled(later)).toBe(false);
    expect(s.started).toBe(2);
    finish();
    await later;
  });

  it('rejects the readers of a failed read once, then lets them go on with the copy they have', async () => {
    const { s, reloads, finish } = source();
    const changed = reloads.changed();
    const current = reloads.current();
    finish(new Error('Postgres is down'));
    await expect(changed).rejects.toThrow('Postgres is down');
    await expect(current).rejects.toThrow('Postgres is down');
    expect(await settled(reloads.current())).toBe(true);
    expect(s.copy).toBe(0);
  });

  it('spaces periodic reads so that they take at most a twentieth of the time', async () => {
    const { reloads, finish } = source();
    reloads.lastMs = -1;
    const read = reloads.periodic();
    finish();
    await read;
    expect(reloads.lastMs).toBeGreaterThanOrEqual(0);
    expect(reloads.periodicDelayMs(30_000)).toBe(30_000);
    reloads.lastMs = 4_000; // 500,000 subscriptions
    expect(reloads.periodicDelayMs(30_000)).toBe(80_000);
  });
});
