import { Migration } from '@mikro-orm/migrations';

/**
 * Money that adds up (issue #11): every charge attempt is a payment transaction
 * linked to what it paid, balances split into available and pending with a
 * balance_transactions book, refunds of a charge, and every amount column int8.
 */
export class Migration20261123100000_balances extends Migration {
  override name = 'Migration20261123100000_balances';

  override up(): void | Promise<void> {
    // Money columns: int8 end to end.
    for (const [table, columns] of [
      ['transactions', ['amount']],
      ['ledger_entries', ['amount']],
      ['account_balances', ['available']],
      ['invoices', ['subtotal', 'total', 'amount_due', 'amount_paid']],
      ['charges', ['amount']],
      ['payment_requests', ['amount']],
      ['recurring_payment_requests', ['amount']],
      ['payouts', ['amount']],
      ['plans', ['amount']],
      ['sandbox_processor_charges', ['amount']],
    ] as const) {
      this.addSql(`alter table "${table}" ${columns.map((c) => `alter column "${c}" type int8`).join(', ')};`);
    }

    this.addSql(`alter table "transactions"
      add column "invoice_id" varchar(255) null,
      add column "subscription_id" varchar(255) null,
      add column "payment_request_id" varchar(255) null,
      add column "customer_id" varchar(255) null,
      add column "processor_charge_id" varchar(255) null,
      add column "source_transaction_id" varchar(255) null,
      add column "amount_refunded" int8 not null default 0;`);
    this.addSql(`create index "transactions_invoice_id_index" on "transactions" ("invoice_id");`);
    this.addSql(`create index "transactions_source_transaction_id_index" on "transactions" ("source_transaction_id");`);
    // One payment transaction per processor charge: a retried charge finds the transaction of its first answer.
    this.addSql(
      `create unique index "transactions_processor_charge_unique" on "transactions" ("processor_charge_id") where type = 'payment' and processor_charge_id is not null;`,
    );
    this.addSql(
      `alter table "transactions" add constraint "transactions_amount_refunded_range" check (amount_refunded >= 0 and amount_refunded <= amount);`,
    );

    this.addSql(`alter table "charges" add column "transaction_id" varchar(255) null;`);
    this.addSql(
      `alter table "invoices" add column "transaction_id" varchar(255) null, add column "amount_refunded" int8 not null default 0;`,
    );
    this.addSql(`alter table "payouts" add column "balance_transaction_id" varchar(255) null;`);

    this.addSql(`alter table "account_balances" add column "pending" int8 not null default 0;`);
    this.addSql(
      `alter table "account_balances" add constraint "account_balances_pending_non_negative" check (pending >= 0);`,
    );
    this.addSql(`alter table "ledger_entries" add column "balance_transaction_id" varchar(255) null;`);
    this.addSql(
      `create index "ledger_entries_balance_transaction_id_index" on "ledger_entries" ("balance_transaction_id");`,
    );

    this.addSql(`create table "balance_transactions" (
      "id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "livemode" boolean not null,
      "type" varchar(255) not null,
      "source" varchar(255) not null,
      "amount" int8 not null,
      "fee" int8 not null,
      "net" int8 not null,
      "currency" varchar(3) not null,
      "status" varchar(255) not null,
      "available_on" timestamptz not null,
      "refunded_from_pending" int8 not null default 0,
      "workflow_confirmed_at" timestamptz null,
      "created_at" timestamptz not null,
      primary key ("id"),
      constraint "balance_transactions_refunded_from_pending_range" check (refunded_from_pending >= 0 and (type <> 'payment' or refunded_from_pending <= net)));`);
    this.addSql(
      `create index "balance_transactions_account_id_livemode_id_index" on "balance_transactions" ("account_id", "livemode", "id");`,
    );
    this.addSql(`create index "balance_transactions_source_index" on "balance_transactions" ("source");`);
    this.addSql(
      `create index "balance_transactions_unconfirmed_pending_index" on "balance_transactions" ("created_at") where status = 'pending' and workflow_confirmed_at is null;`,
    );

    // The sandbox processor's refunds table comes with Migration20261123103000_processor.
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "balance_transactions" cascade;`);
    this.addSql(`alter table "ledger_entries" drop column "balance_transaction_id";`);
    this.addSql(
      `alter table "account_balances" drop constraint "account_balances_pending_non_negative", drop column "pending";`,
    );
    this.addSql(`alter table "payouts" drop column "balance_transaction_id";`);
    this.addSql(`alter table "invoices" drop column "transaction_id", drop column "amount_refunded";`);
    this.addSql(`alter table "charges" drop column "transaction_id";`);
    this.addSql(`alter table "transactions" drop constraint "transactions_amount_refunded_range";`);
    this.addSql(`drop index "transactions_processor_charge_unique";`);
    this.addSql(`drop index "transactions_source_transaction_id_index";`);
    this.addSql(`drop index "transactions_invoice_id_index";`);
    this.addSql(
      `alter table "transactions" drop column "invoice_id", drop column "subscription_id", drop column "payment_request_id", drop column "customer_id", drop column "processor_charge_id", drop column "source_transaction_id", drop column "amount_refunded";`,
    );
    // Amount columns stay int8: narrowing could fail on stored values.
  }
}
