import { parseHttpBody as parseBody } from '@app/contracts';
import { RateLimiter } from './rate-limiter';

describe('HTTP endpoint helpers', () => {
  it('rate limiter: allows the burst, then the average rate, and says how long to wait', () => {
    let now = 0;
    const limiter = new RateLimiter(2, 3, () => now);
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0]);
    expect(limiter.take('a')).toBe(1);
    expect(limiter.take('b')).toBe(0); // per endpoint
    now += 500; // one token back at 2/s
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBeGreaterThanOrEqual(1);
    expect(new RateLimiter(0, 1, () => now).take('x')).toBe(0); // 0 = unlimited
  });

  it('parses JSON and form bodies, keeps anything else (and broken JSON) as the raw string', () => {
    expect(parseBody('application/json; charset=utf-8', '{"a":1}')).toEqual({ a: 1 });
    expect(parseBody('application/vnd.api+json', '[1]')).toEqual([1]);
    expect(parseBody('application/json', '{oops')).toBe('{oops');
    expect(parseBody('application/x-www-form-urlencoded', 'a=1&b=x%20y')).toEqual({ a: '1', b: 'x y' });
    // A repeated field keeps every value, as a repeated query parameter does (`event.query`).
    expect(parseBody('application/x-www-form-urlencoded', 'a=1&b=2&a=3&a=4')).toEqual({ a: ['1', '3', '4'], b: '2' });
    expect(Object.getPrototypeOf(parseBody('application/x-www-form-urlencoded', '__proto__=x'))).toBe(Object.prototype);
    expect(parseBody('text/plain', 'hi')).toBe('hi');
    expect(parseBody('', '')).toBe('');
  });
});
