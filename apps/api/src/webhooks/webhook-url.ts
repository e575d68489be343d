import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { EntityManager } from '@mikro-orm/postgresql';
import { APP_CONFIG, AppConfig } from '@app/config';
import { decryptValue, EncryptedValue, encryptValue } from '@app/contracts';
import { Webhook } from '@app/db';
import { credentialsMasked } from '@app/net';

/**
 * A webhook's url may carry its receiver's credentials (user info, `?token=…`): it is stored encrypted with
 * SECRETS_KEY, as the signing secret is, and in `url` as the API shows it.
 */
export function putUrl(webhook: Webhook, url: string, key: Buffer): void {
  webhook.url = credentialsMasked(url);
  webhook.urlSealed = encryptValue(key, url) as unknown as Record<string, unknown>;
}

/** The url as given (deliveries use it), or undefined when SECRETS_KEY cannot decrypt it. */
export function givenUrl(webhook: Webhook, key: Buffer): string | undefined {
  if (!webhook.urlSealed) return webhook.url;
  try {
    return decryptValue<string>(key, webhook.urlSealed as unknown as EncryptedValue);
  } catch {
    return undefined;
  }
}

/** Rows read at once while sealing the urls of webhooks saved before urls were sealed. */
const BATCH = 500;

/** Seals, once the api has started, the urls of webhooks saved in plain text before (a migration has no SECRETS_KEY). */
@Injectable()
export class WebhookUrlSealer implements OnApplicationBootstrap {
  private readonly logger = new Logger('WebhookUrlSealer');
  constructor(private readonly em: EntityManager, @Inject(APP_CONFIG) private readonly config: AppConfig) {}

  onApplicationBootstrap(): void {
    void this.sealAll().catch((e: Error) => this.logger.error(`sealing the urls of earlier webhooks failed (retried at the next start): ${e.message}`));
  }

  async sealAll(): Promise<number> {
    const conn = this.em.getConnection();
    let sealed = 0;
    for (;;) {
      const rows = await conn.execute<{ id: string; url: string }[]>(`select id, url from webhooks where url_sealed is null order by id limit ${BATCH}`);
      for (const r of rows) {
        // Only the row as read: another replica sealing it, or an update meanwhile, wins.
        const res = await conn.execute(`update webhooks set url = ?, url_sealed = ? where id = ? and url_sealed is null and url = ?`, [credentialsMasked(r.url), JSON.stringify(encryptValue(this.config.secretsKey, r.url)), r.id, r.url], 'run');
        sealed += (res as { affectedRows?: number }).affectedRows ?? 0;
      }
      if (rows.length < BATCH) break;
    }
    if (sealed) this.logger.log(`sealed the urls of ${sealed} webhooks saved before urls were encrypted`);
    return sealed;
  }
}
