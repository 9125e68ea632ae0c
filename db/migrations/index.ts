import { Migration20261122000000_initial } from './Migration20261122000000_initial.ts';
import { Migration20261122125633_ledger } from './Migration20261122125633_ledger.ts';
import { Migration20261122130024_idempotency } from './Migration20261122130024_idempotency.ts';
import { Migration20261122133500_sent_emails } from './Migration20261122133500_sent_emails.ts';
import { Migration20261122133600_invoice_numbers } from './Migration20261122133600_invoice_numbers.ts';
import { Migration20261122134000_catalog } from './Migration20261122134000_catalog.ts';
import { Migration20261122134146_events } from './Migration20261122134146_events.ts';
import { Migration20261122134432_payouts } from './Migration20261122134432_payouts.ts';
import { Migration20261122134500_payment_requests } from './Migration20261122134500_payment_requests.ts';
import { Migration20261122141000_subscription_lifecycle } from './Migration20261122141000_subscription_lifecycle.ts';
import { Migration20261122134700_webhooks } from './Migration20261122134700_webhooks.ts';
import { Migration20261122142417_maintenance } from './Migration20261122142417_maintenance.ts';
import { Migration20261123100000_balances } from './Migration20261123100000_balances.ts';
import { Migration20261123103000_processor } from './Migration20261123103000_processor.ts';
import { Migration20261123110000_settings_per_mode } from './Migration20261123110000_settings_per_mode.ts';
import { Migration20261123120000_idempotency_scope } from './Migration20261123120000_idempotency_scope.ts';
import { Migration20261123140000_cli_keys } from './Migration20261123140000_cli_keys.ts';
import { Migration20261123150000_exports } from './Migration20261123150000_exports.ts';
import { Migration20261123160000_payout_destinations } from './Migration20261123160000_payout_destinations.ts';
import { Migration20261123170000_test_clocks } from './Migration20261123170000_test_clocks.ts';
import { Migration20261123180000_export_filters } from './Migration20261123180000_export_filters.ts';
import { Migration20261123181000_processor_customers } from './Migration20261123181000_processor_customers.ts';

/** Every migration, in order. A new one is written by `npm run migration:create -- <name>` and added here. */
export const migrations = [
  { name: 'Migration20261122000000_initial', class: Migration20261122000000_initial },
  { name: 'Migration20261122125633_ledger', class: Migration20261122125633_ledger },
  { name: 'Migration20261122130024_idempotency', class: Migration20261122130024_idempotency },
  { name: 'Migration20261122133500_sent_emails', class: Migration20261122133500_sent_emails },
  { name: 'Migration20261122133600_invoice_numbers', class: Migration20261122133600_invoice_numbers },
  { name: 'Migration20261122134000_catalog', class: Migration20261122134000_catalog },
  { name: 'Migration20261122134146_events', class: Migration20261122134146_events },
  { name: 'Migration20261122134432_payouts', class: Migration20261122134432_payouts },
  { name: 'Migration20261122134500_payment_requests', class: Migration20261122134500_payment_requests },
  { name: 'Migration20261122141000_subscription_lifecycle', class: Migration20261122141000_subscription_lifecycle },
  { name: 'Migration20261122134700_webhooks', class: Migration20261122134700_webhooks },
  { name: 'Migration20261122142417_maintenance', class: Migration20261122142417_maintenance },
  { name: 'Migration20261123100000_balances', class: Migration20261123100000_balances },
  { name: 'Migration20261123103000_processor', class: Migration20261123103000_processor },
  { name: 'Migration20261123110000_settings_per_mode', class: Migration20261123110000_settings_per_mode },
  { name: 'Migration20261123120000_idempotency_scope', class: Migration20261123120000_idempotency_scope },
  { name: 'Migration20261123140000_cli_keys', class: Migration20261123140000_cli_keys },
  { name: 'Migration20261123150000_exports', class: Migration20261123150000_exports },
  { name: 'Migration20261123160000_payout_destinations', class: Migration20261123160000_payout_destinations },
  { name: 'Migration20261123170000_test_clocks', class: Migration20261123170000_test_clocks },
  { name: 'Migration20261123180000_export_filters', class: Migration20261123180000_export_filters },
  { name: 'Migration20261123181000_processor_customers', class: Migration20261123181000_processor_customers },
];
