import { Migration } from '@mikro-orm/migrations';

/**
 * Idempotency keys survive a crash: a request in progress holds a short lease
 * (`locked_until`, refreshed while it runs); once it lapses, a retry takes the key
 * over at once. Keys used before this migration were scoped by account and mode,
 * shared by every member of an account: they are dropped so none is replayed to
 * another principal (a retry of one of them runs afresh).
 */
export class Migration20261123120000_idempotency_scope extends Migration {
  override name = 'Migration20261123120000_idempotency_scope';

  override up(): void | Promise<void> {
    this.addSql(`delete from "idempotency_keys";`);
    this.addSql(`alter table "idempotency_keys" add column "locked_until" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "idempotency_keys" drop column if exists "locked_until";`);
  }
}
