import { characterCount, longerThan } from './characters';
import { channelNameProblem } from './channels';

describe('characterCount', () => {
  it('counts a surrogate pair as one character, as JSON Schema and Postgres do', () => {
    expect(characterCount('')).toBe(0);
    expect(characterCount('abc')).toBe(3);
    expect(characterCount('😀'.repeat(200))).toBe(200);
    expect(characterCount('a😀b')).toBe(3);
    // A lone half is one character too.
    expect(characterCount('\ud800x\udc00')).toBe(3);
    expect(characterCount('\ud83d')).toBe(1);
  });
});

describe('longerThan', () => {
  it('compares characters, not UTF-16 units, with the bound', () => {
    expect(longerThan('😀'.repeat(200), 200)).toBe(false);
    expect(longerThan('😀'.repeat(201), 200)).toBe(true);
    expect(longerThan('a'.repeat(201), 200)).toBe(true);
    expect(longerThan('a'.repeat(200), 200)).toBe(false);
  });
});

describe('channelNameProblem', () => {
  it('takes up to 255 characters, emoji counted as one', () => {
    expect(channelNameProblem('📣'.repeat(255))).toBeUndefined();
    expect(channelNameProblem('📣'.repeat(256))).toBe('must be at most 255 characters, got 256');
    expect(channelNameProblem('a'.repeat(256))).toBe('must be at most 255 characters, got 256');
  });

  it('refuses names no subscription could name: U+0000 or a lone surrogate; a surrogate pair is one character', () => {
    for (const name of ['ch\u0000an', String.fromCharCode(0xd800), `a${String.fromCharCode(0xdc00)}b`]) {
      expect(channelNameProblem(name)).toBe('must not hold U+0000 or a lone UTF-16 surrogate (no subscription could name the channel)');
    }
    expect(channelNameProblem('ch📣an')).toBeUndefined();
  });
});
