import { Migration } from '@mikro-orm/migrations';

/** Credit notes (issue #27): numbered per invoice, with where their money went (refund, customer balance, out of band). */
export class Migration20261127020000_credit_notes extends Migration {
  override name = 'Migration20261127020000_credit_notes';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "credit_notes" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "number" varchar(255) not null, ` +
        `"sequence" int not null, "invoice_id" varchar(255) not null, "customer_id" varchar(255) not null, "currency" varchar(3) not null, "subtotal" bigint not null, ` +
        `"total" bigint not null, "lines" jsonb not null, "reason" varchar(255) null, "memo" text null, "refund_amount" bigint not null, "credit_amount" bigint not null, ` +
        `"out_of_band_amount" bigint not null, "refund_transaction_id" varchar(255) null, "customer_balance_transaction_id" varchar(255) null, "status" varchar(255) not null, ` +
        `"created_at" timestamptz not null, "voided_at" timestamptz null, primary key ("id"), ` +
        `constraint "credit_notes_amounts_check" check ("refund_amount" >= 0 and "credit_amount" >= 0 and "out_of_band_amount" >= 0 and "total" > 0));`,
    );
    this.addSql(
      `create unique index "credit_notes_invoice_id_sequence_unique" on "credit_notes" ("invoice_id", "sequence");`,
    );
    this.addSql(
      `create index "credit_notes_account_id_livemode_id_index" on "credit_notes" ("account_id", "livemode", "id");`,
    );
    this.addSql(`create index "credit_notes_invoice_id_index" on "credit_notes" ("invoice_id");`);
    this.addSql(`create index "credit_notes_customer_id_index" on "credit_notes" ("customer_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "credit_notes" cascade;`);
  }
}
