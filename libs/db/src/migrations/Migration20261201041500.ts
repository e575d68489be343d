import { Migration } from '@mikro-orm/migrations';

/**
 * A `component_url` is kept with its user info and its query's values as `********` (they may be credentials;
 * `shownUrl`, libs/net): those saved before are rewritten so (the API already shows every one so).
 */
export class Migration20261201041500 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`update "components" set "component_url" = regexp_replace(regexp_replace("component_url", '^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@', '\\1********@'), '([?&][^=&#]*)=[^&#]*', '\\1=********', 'g') where "component_url" ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@' or "component_url" like '%?%=%';`);
  }

  override async down(): Promise<void> {
    // The credentials are gone: nothing to restore.
  }
}
