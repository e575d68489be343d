import { Migration } from '@mikro-orm/migrations';

/**
 * The workflow of each waiting send, as a column with an index: deleting a workflow drops its waiting sends, and
 * `message->>'workflowId'` read and parsed every row of the table — all accounts' sends, as many as one account's
 * silent receivers keep held back — in every delete of every workflow.
 */
export class Migration20261201130000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "send_retries" add column if not exists "workflow_id" text generated always as ("message"->>'workflowId') stored;`);
    this.addSql(`create index if not exists "send_retries_workflow_id_index" on "send_retries" ("workflow_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "send_retries_workflow_id_index";`);
    this.addSql(`alter table "send_retries" drop column if exists "workflow_id";`);
  }
}
