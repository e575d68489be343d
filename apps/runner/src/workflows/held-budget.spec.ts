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
});
