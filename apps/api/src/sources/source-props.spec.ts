import { randomBytes } from 'node:crypto';
import type { ConfigurableProp } from '@app/component-model';
import { isEncrypted } from '@app/contracts';
import { carriedProps, decryptProps, encryptProps, propsView, slugify, timerView, unmaskInput } from './source-props';

const key = randomBytes(32);
const props: ConfigurableProp[] = [
  { name: 'http', type: '$.interface.http' },
  { name: 'timer', type: '$.interface.timer' },
  { name: 'db', type: '$.service.db' },
  { name: 'token', type: 'string', secret: true },
  { name: 'gh', type: 'app', app: 'github' },
  { name: 'plain', type: 'string' },
];

describe('source props', () => {
  it('encrypts secrets and $auth, decrypts them back', () => {
    const plain = { timer: { intervalSeconds: 60 }, token: 's3cret', gh: { $auth: { oauth_access_token: 'x' } }, plain: 'p' };
    const stored = encryptProps(props, plain, key);
    expect(isEncrypted(stored.token)).toBe(true);
    expect(isEncrypted((stored.gh as { $auth: unknown }).$auth)).toBe(true);
    expect(stored.plain).toBe('p');
    expect(JSON.stringify(stored)).not.toContain('s3cret');
    expect(decryptProps(stored, key)).toEqual(plain);
  });

  it('leaves a value of the encrypted form it did not seal as stored; keeping it, or its mask, is a 400 naming the prop', () => {
    const forged = { token: { $enc: 'AAAA' }, gh: { $auth: { $enc: 'not base64 of a sealed value' } }, plain: { $enc: 'AAAA' } };
    expect(decryptProps(forged, key)).toEqual(forged);
    const refusal = (prop: string) => expect.objectContaining({ code: 'invalid_props', details: { prop } });
    for (const prop of ['token', 'gh', 'plain']) {
      const only = props.filter((p) => p.name === prop);
      expect(() => carriedProps(only, forged, key)).toThrow(refusal(prop));
    }
    expect(() => unmaskInput(props, { token: '********' }, decryptProps(forged, key))).toThrow(refusal('token'));
    expect(() => unmaskInput(props, { gh: { $auth: '********' } }, decryptProps(forged, key))).toThrow(refusal('gh'));
    // A new value is taken; sealed values beside it still open.
    const sealed = encryptProps(props, { token: 't' }, key);
    expect(carriedProps(props, { ...sealed, plain: 'p' }, key)).toEqual({ token: 't', plain: 'p' });
  });

  it('shows endpoint URLs, timers, and masks secrets', () => {
    const stored = encryptProps(props, { timer: { cron: '*/10 * * * *', timezone: 'UTC' }, token: 't', gh: { $auth: {} }, plain: 'p' }, key);
    expect(propsView(props, stored, 'http://h/e/en1')).toEqual({
      http: { endpoint_url: 'http://h/e/en1' },
      timer: { cron: '*/10 * * * *', interval_seconds: 600, timezone: 'UTC' },
      token: '********',
      gh: { $auth: '********' },
      plain: 'p',
    });
    expect(timerView({ intervalSeconds: 45 })).toEqual({ cron: null, interval_seconds: 45 });
  });

  it('keeps stored secrets when the mask is sent back', () => {
    const current = { token: 'old', gh: { $auth: { k: 1 } } };
    expect(unmaskInput(props, { token: '********', gh: { $auth: '********' }, plain: 'x' }, current)).toEqual({ token: 'old', gh: { $auth: { k: 1 } }, plain: 'x' });
    expect(unmaskInput(props, { token: 'new' }, current)).toEqual({ token: 'new' });
  });

  it('takes the mask as a plain value for a prop that shows it, and refuses it for a hidden one with nothing stored', () => {
    expect(unmaskInput(props, { plain: '********' }, { plain: 'old' })).toEqual({ plain: '********' });
    expect(() => unmaskInput(props, { token: '********' }, {})).toThrow('configured_props.token: "********" keeps the secret stored for token, and none is: give its value');
    expect(() => unmaskInput(props, { gh: { $auth: '********' } }, { token: 'old' })).toThrow('configured_props.gh: "********" keeps the $auth stored for gh, and none is: give its value');
  });

  it.each([
    ['My Source!', 'my-source'],
    ['  Crème brûlée -- feed ', 'creme-brulee-feed'],
    ['***', 'source'],
    ['a'.repeat(150), 'a'.repeat(100)],
  ])('slugify(%j) = %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });
});
