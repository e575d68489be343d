import { HeldBudget } from './held-budget';

describe('HeldBudget', () => {
  it("bounds what one account's runs hold together, each account on its own, until they release it", () => {
    const budget = new HeldBudget(100);
    expect(budget.take('a', 60)).toBe(true);
    expect(budget.take('a', 50)).toBe(false);
    expect(budget.take('b', 100)).toBe(true);
    expect(budget.take('a', 40)).toBe(true);
    budget.release('a', 60);
    expect(budget.take('a', 60)).toBe(true);
    expect(budget.take('a', 1)).toBe(false);
  });

  it("gives back all a run's share took at once, and only once", () => {
    const budget = new HeldBudget(100);
    const run = budget.share('a');
    expect(run.take(30)).toBe(true);
    expect(run.take(40)).toBe(true);
    expect(run.take(40)).toBe(false);
    expect(budget.take('a', 31)).toBe(false);
    run.release();
    run.release();
    expect(budget.take('a', 100)).toBe(true);
  });
});
