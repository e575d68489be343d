import { randomBytes } from 'node:crypto';
import { encryptValue } from '@app/contracts';
import { decryptSealed, resolveProps } from './props';
import { secretValues } from '../workflows/secret-redaction';

const key = randomBytes(32);

describe('decryptSealed', () => {
  it("decrypts a prop's sealed value and an app's sealed $auth", () => {
    const stored = { s: encryptValue(key, 'the-secret'), app: { $auth: encryptValue(key, { token: 't-1' }) }, n: 3 };
    expect(decryptSealed(key, stored)).toEqual({ s: 'the-secret', app: { $auth: { token: 't-1' } }, n: 3 });
  });

  it('hands a value of the sealed form anywhere else to the code as stored, never decrypted', () => {
    const cipher = encryptValue(key, 'must-stay-sealed');
    const stored = { o: { nested: cipher }, list: [cipher], deep: { a: { $auth: cipher } } };
    expect(decryptSealed(key, stored)).toEqual(stored);
    expect(resolveProps(key, stored, [])).toEqual(stored);
  });

  it('a workflow hides from its records only the values sealed at those places', () => {
    const stored = { s: encryptValue(key, 'sealed-secret'), o: { nested: encryptValue(key, 'stored-object') } };
    expect(secretValues(key, {}, [stored])).toEqual(['sealed-secret']);
  });
});
