import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { WebhookSigner } from './webhook-signer';

describe('WebhookSigner', () => {
  it('signs exactly as the Standard Webhooks reference library, which verifies its signatures', () => {
    for (const body of ['{"a":1}', '', 'ünïcødé ✓ {"x":"\\u0000"}', 'x'.repeat(10_000)]) {
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      const at = new Date(1_700_000_000_123);
      const mine = new WebhookSigner(secret).sign('1700000000000-0', at, body);
      expect(mine).toBe(new Webhook(secret).sign('1700000000000-0', at, body));
      const headers = { 'webhook-id': '1700000000000-0', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': '' };
      headers['webhook-signature'] = new WebhookSigner(secret).sign(headers['webhook-id'], new Date(Number(headers['webhook-timestamp']) * 1000), body);
      expect(() => new Webhook(secret).verify(body, headers, { jsonParse: false })).not.toThrow();
    }
  });

  it('takes a secret without the whsec_ prefix, and refuses an empty one', () => {
    const raw = randomBytes(24).toString('base64');
    expect(new WebhookSigner(raw).sign('a', new Date(0), 'b')).toBe(new WebhookSigner(`whsec_${raw}`).sign('a', new Date(0), 'b'));
    expect(() => new WebhookSigner('whsec_')).toThrow(/empty/);
  });
});
