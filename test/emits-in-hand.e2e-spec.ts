import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '@app/config';
import type { EmittedEvent } from '@app/contracts';
import { NatsService } from '@app/nats';
import { emitBudgetsOf, owedMs } from '../apps/runner/src/ops/emit-budget';
import { JetStreamPublisher } from '../apps/runner/src/ops/jetstream-publisher';
import { natsAdminEnv, need } from './support/env';

/**
 * The runner reads no more of an account's sandbox answers while it owes its EMITS_*_PER_SECOND_PER_ACCOUNT budgets
 * (test/isolation-held-answers.e2e-spec.ts), and they are taken once its events are encoded. Encoding a large result
 * hands the event loop back, so reading went on in the meantime, the account owing nothing yet: on a loaded machine a
 * second result of tens of MB could be read in full beside the first. Now the account is held from the first
 * hand-back of the encoding: at no turn of the event loop until its events are taken from the budget does it owe nothing.
 */
describe("an account's large result being encoded for EMITS", () => {
  const prefix = `t_${need('TEST_RUN_ID')}_inhand${randomBytes(3).toString('hex')}`;
  let nats: NatsService;

  beforeAll(async () => {
    nats = new NatsService(loadConfig({ ...natsAdminEnv(), NATS_PREFIX: prefix, DATA_DIR: mkdtempSync(join(tmpdir(), 'emits-in-hand-')), EMITS_MAX_BYTES: String(64 * 1024 * 1024) }), 'emits-in-hand-spec');
    await nats.start();
  });
  afterAll(async () => {
    await nats?.stop();
  });

  const events = (owner: string, count: number, bytes: number): EmittedEvent[] =>
    Array.from({ length: count }, (_, i) => ({
      id: `${1_700_000_000_000 + i}-${owner}${i}`,
      emitterId: `dc_${owner}`,
      ownerId: owner,
      name: '',
      event: { i, pad: 'h'.repeat(bytes) },
      emitId: `${owner}.inv:e${i}`,
      ts: 0,
      emittedAtMs: 0,
    }));

  it('holds the account from the first hand-back of its encoding until its events are taken from the budget', async () => {
    // 2 MiB a second with a burst of 20 MiB: the 24 MB below owe about 2 s once taken.
    const budgets = emitBudgetsOf({ emitsPerSecondPerAccount: 0, emitsBytesPerSecondPerAccount: 2 * 1024 * 1024, emitsPerInvocation: 10_000, eventMaxBytes: 512 * 1024 });
    const publisher = new JetStreamPublisher(nats, pino({ level: 'silent' }), budgets);
    try {
      let done = false;
      const published = publisher.publishEvents(events('u_big', 120, 200_000)).finally(() => (done = true));
      // What the sandbox channel's reader asks after each of its reads (owedMs): one sample per turn of the event
      // loop, until the budget shows the events taken.
      const beforeTake: number[] = [];
      while (!done && !(budgets.bytes!.owedMs('u_big') > 0)) {
        beforeTake.push(owedMs(budgets, 'u_big'));
        await new Promise((r) => setImmediate(r));
      }
      expect(budgets.bytes!.owedMs('u_big')).toBeGreaterThan(0);
      // The encoding took several turns; in none of them could the account's answers be read.
      expect(beforeTake.length).toBeGreaterThan(1);
      expect(beforeTake.slice(1).filter((ms) => ms <= 0)).toEqual([]);
      await published;
      // Another account is never held by it, and once published the account is no longer in hand.
      expect(owedMs(budgets, 'u_other')).toBe(0);
      expect(budgets.inHand?.has('u_big')).toBe(false);
    } finally {
      publisher.close();
    }
  }, 60_000);

  it('does not hold an account whose result is encoded without a hand-back (the usual small one)', async () => {
    const budgets = emitBudgetsOf({ emitsPerSecondPerAccount: 0, emitsBytesPerSecondPerAccount: 2 * 1024 * 1024, emitsPerInvocation: 10_000, eventMaxBytes: 512 * 1024 });
    const publisher = new JetStreamPublisher(nats, pino({ level: 'silent' }), budgets);
    try {
      const published = publisher.publishEvents(events('u_small', 3, 100));
      await new Promise((r) => setImmediate(r));
      expect(owedMs(budgets, 'u_small')).toBe(0);
      await published;
    } finally {
      publisher.close();
    }
  });
});
