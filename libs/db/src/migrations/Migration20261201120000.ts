import { Migration } from '@mikro-orm/migrations';

/**
 * A webhook's url may carry its receiver's credentials: it is kept encrypted with SECRETS_KEY in `url_sealed`, as its
 * signing secret is, and `url` keeps it as the API shows it (credentials as `********`). Rows saved before are sealed by
 * the api when it starts (a migration has no SECRETS_KEY); until then deliveries use `url` as stored.
 */
export class Migration20261201120000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "webhooks" add column "url_sealed" jsonb null;`);
  }

  override async down(): Promise<void> {
    // Urls with credentials keep them only sealed: after this, they are delivered to as shown (without them).
    this.addSql(`alter table "webhooks" drop column "url_sealed";`);
  }
}
