import { randomUUID } from 'node:crypto';
import type { Logger } from '@nestjs/common';
import { encodeJson, readRestartSandboxes, type RestartSandboxes } from '@app/contracts';
import type { NatsService } from '@app/nats';

/**
 * Tells every runner and api replica that `deleted` (a source or workflow) of `account` is gone (`ctl.restart-sandboxes` with
 * `retire`, once per deletion): each retires the account's sandbox process there (libs/sandbox, IsolatedRunner.retire),
 * so that what the deleted code's runs left behind (a timer, a callback) stops wherever it ran, and the account's
 * other runs in flight finish once; each api replica retires its own (onRetirement), where the code's reads ran.
 * When NATS is closed it is logged, and the processes stop when they next idle out.
 */
export function retireSandboxesOf(nats: NatsService, account: string, deleted: string, logger: Logger): void {
  const retire: RestartSandboxes = { id: randomUUID(), accounts: [account], retire: true };
  try {
    nats.nc.publish(nats.names.restartSandboxes, encodeJson(retire));
  } catch (e) {
    logger.warn(`could not tell the runners to retire the sandbox processes of deleted ${deleted}'s account: ${(e as Error).message}`);
  }
}

/**
 * Calls `retire` with the accounts of each `ctl.restart-sandboxes` message with `retire: true` (a deletion on any api
 * replica, this one included). Access changes' restarts (no `retire`) reach the api otherwise (AccessChangeListener).
 * Returns the unsubscribe.
 */
export function onRetirement(nats: NatsService, retire: (accounts: string[]) => void): () => void {
  const sub = nats.nc.subscribe(nats.names.restartSandboxes, {
    callback: (err, msg) => {
      const change = err ? undefined : readRestartSandboxes(msg.data);
      if (change?.retire) retire(change.accounts);
    },
  });
  return () => sub.unsubscribe();
}
