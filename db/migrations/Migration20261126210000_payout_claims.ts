import { Migration } from '@mikro-orm/migrations';

/**
 * A payout's claim for its rail (services/payouts/rail.ts submitPayout): `submitted_at` is set, under the
 * payout's row lock, before the rail sees the payout; from then on it cannot be canceled or held.
 * Cancel and the claim were two decisions before, and a cancel landing between the rail's hand-off
 * and `in_transit` both paid the payout and gave its money back (issue #24).
 */
export class Migration20261126210000_payout_claims extends Migration {
  override name = 'Migration20261126210000_payout_claims';

  override up(): void | Promise<void> {
    this.addSql(`alter table "payouts" add column "submitted_at" timestamptz null;`);
    // Payouts already in transit or ended were handed over before claims existed.
    this.addSql(
      `update "payouts" set "submitted_at" = "updated_at" where "status" in ('in_transit', 'paid', 'failed');`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "payouts" drop column if exists "submitted_at";`);
  }
}
