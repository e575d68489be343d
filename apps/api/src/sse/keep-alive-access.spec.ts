import { NotFoundError, ServiceUnavailableError, UnauthorizedError } from '@app/contracts';
import { keepAliveAccess } from './keep-alive-access';

describe('keepAliveAccess', () => {
  const answer = (e?: Error) => keepAliveAccess(async () => (e ? Promise.reject(e) : undefined))();

  it('keeps a stream whose check passes', async () => {
    expect(await answer()).toBe(true);
  });

  it('closes it when the key is revoked or the source is no longer the caller’s', async () => {
    expect(await answer(new UnauthorizedError())).toBe(false);
    expect(await answer(new NotFoundError())).toBe(false);
  });

  it('keeps it through a failure that is not a denial (the check is asked again at the next keep-alive)', async () => {
    expect(await answer(new ServiceUnavailableError('Postgres is unavailable'))).toBe(true);
    expect(await answer(new Error('Connection terminated unexpectedly'))).toBe(true);
  });
});
