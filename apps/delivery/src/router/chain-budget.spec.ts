import { ChainBudget } from './chain-budget';

describe('ChainBudget', () => {
  it('routes a chain up to its bound, then one refusal per listener, then nothing', () => {
    const budget = new ChainBudget(3);
    expect(['a', 'b', 'a'].map((l) => budget.take('root', l))).toEqual(['run', 'run', 'run']);
    expect(budget.take('other', 'a')).toBe('run');
    expect(['a', 'a', 'b', 'b', 'a'].map((l) => budget.take('root', l))).toEqual(['refuse', 'drop', 'refuse', 'drop', 'drop']);
  });

  it('past the depth bound, gives each listener one refusal and no run, whatever the runs so far', () => {
    const budget = new ChainBudget(100);
    expect(['a', 'a', 'b', 'a'].map((l) => budget.take('root', l, true))).toEqual(['refuse', 'drop', 'refuse', 'drop']);
    expect(budget.take('root', 'c')).toBe('run');
  });

  it('forgets a chain idle for ten minutes', () => {
    let now = 0;
    const budget = new ChainBudget(1, () => now);
    expect(budget.take('root', 'a')).toBe('run');
    expect(budget.take('root', 'a')).toBe('refuse');
    now += 10 * 60_000;
    budget.take('later', 'a');
    expect(budget.take('root', 'a')).toBe('run');
  });
});
