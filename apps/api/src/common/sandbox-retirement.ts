import { randomUUID } from 'node:crypto';
import { encodeJson, type RestartSandboxes } from '@app/contracts';
import type { NatsService } from '@app/nats';

/**
 * Tells every runner replica that a source or workflow of `account` was deleted (`ctl.restart-sandboxes` with
 * `retire`, once per deletion): each retires the account's sandbox process there (libs/sandbox, IsolatedRunner.retire),
 * so that what the deleted code's runs left behind (a timer, a callback) stops wherever it ran, and the account's
 * other runs in flight finish once. Returns why it could not be told (NATS closed), for the caller's log: the
 * processes then stop when they next idle out.
 */
export function retireSandboxesOf(nats: NatsService, account: string): string | undefined {
  const retire: RestartSandboxes = { id: randomUUID(), accounts: [account], retire: true };
  try {
    nats.nc.publish(nats.names.restartSandboxes, encodeJson(retire));
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
