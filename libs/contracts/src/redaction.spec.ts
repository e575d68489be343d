import { REDACTED, redactThenCut } from './redaction';

describe('redactThenCut', () => {
  const values = ['sekret-value', 'other'];
  it.each([
    ['token sekret-value end', 100, `token ${REDACTED} end`],
    // Hidden before the cut: the value past the cut is not left as its start.
    [`${'x'.repeat(10)}sekret-value`, 14, `${'x'.repeat(10)}${REDACTED.slice(0, 4)}…`],
    // Cut already, through a value: its start is hidden, however short.
    [`${'x'.repeat(10)}sekr…`, 100, `${'x'.repeat(10)}${REDACTED}…`],
    [`${'x'.repeat(10)}s…`, 100, `${'x'.repeat(10)}${REDACTED}…`],
    // A text cut elsewhere, or not cut, keeps its end.
    [`${'x'.repeat(10)}…`, 100, `${'x'.repeat(10)}…`],
    ['ends in sekr', 100, 'ends in sekr'],
  ])('%j (max %d) → %j', (text, max, shown) => {
    expect(redactThenCut(text, values, max)).toBe(shown);
  });
});
