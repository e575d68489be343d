import { InstallBudget } from './install-budget';

describe('InstallBudget', () => {
  it('admits up to the limit per account in any 24 hours, then refuses until the oldest leaves the window', () => {
    let now = 1_000_000;
    const budget = new InstallBudget(2, () => now);
    budget.admit('u_a');
    now += 60_000;
    budget.admit('u_a');
    now += 60_000;
    expect(() => budget.admit('u_a')).toThrow(expect.objectContaining({ name: 'InstallRefusedError', retryAfterSeconds: 24 * 3600 - 120 }));
    // Another account has its own budget; a refusal is not counted.
    budget.admit('u_b');
    now = 1_000_000 + 24 * 3600 * 1000 + 1;
    budget.admit('u_a');
    expect(() => budget.admit('u_a')).toThrow(expect.objectContaining({ retryAfterSeconds: 60 }));
  });

  it('admits everything when the limit is 0', () => {
    const budget = new InstallBudget(0);
    for (let i = 0; i < 1000; i++) budget.admit('u_a');
  });
});
