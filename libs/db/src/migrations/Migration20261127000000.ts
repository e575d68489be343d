import { Migration } from '@mikro-orm/migrations';

/**
 * A waiting retry's message as `json`, not `jsonb`: json keeps the text as written (key order,
 * `\u0000`), so every attempt POSTs the emitted JSON byte for byte; jsonb reordered the keys of
 * the retries' bodies. Rows written before hold jsonb's text, or the base64 form of their JSON.
 */
export class Migration20261127000000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "webhook_retries" alter column "message" type json using "message"::json;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_retries" alter column "message" type jsonb using "message"::jsonb;`);
  }
}
