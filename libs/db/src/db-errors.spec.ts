import { DeadlockException, DriverException, UniqueConstraintViolationException } from '@mikro-orm/core';
import { classifyDbError } from './db-errors';

const pgError = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });

describe('classifyDbError', () => {
  it('tells a lost or refused connection, a saturated pool and a cancelled statement from a bug', () => {
    expect(classifyDbError(pgError('57P01', 'terminating connection due to administrator command'))).toBe('unavailable');
    expect(classifyDbError(pgError('08006'))).toBe('unavailable');
    expect(classifyDbError(pgError('53300', 'sorry, too many clients already'))).toBe('unavailable');
    expect(classifyDbError(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'))).toBe('unavailable');
    expect(classifyDbError(new Error('select 1 - Connection terminated unexpectedly'))).toBe('unavailable');
    // The next query of a transaction whose connection died.
    expect(classifyDbError(new DriverException(new Error('Transaction query already complete, run with DEBUG=knex:tx for more info')))).toBe('unavailable');
    expect(classifyDbError(new DriverException(new Error('Knex: Timeout acquiring a connection. The pool is probably full.')))).toBe('busy');
    expect(classifyDbError(pgError('57014', 'canceling statement due to statement timeout'))).toBe('busy');
    expect(classifyDbError(pgError('42601', 'syntax error'))).toBeUndefined();
    expect(classifyDbError(new TypeError('x is undefined'))).toBeUndefined();
  });

  it('calls a collision with a concurrent transaction a conflict', () => {
    expect(classifyDbError(new UniqueConstraintViolationException(pgError('23505')))).toBe('conflict');
    expect(classifyDbError(new DeadlockException(pgError('40P01')))).toBe('conflict');
    expect(classifyDbError(pgError('40001'))).toBe('conflict');
  });
});
