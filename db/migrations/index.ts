import { Migration20261122000000_initial } from './Migration20261122000000_initial.ts';
import { Migration20261122125633_ledger } from './Migration20261122125633_ledger.ts';
import { Migration20261122130024_idempotency } from './Migration20261122130024_idempotency.ts';
import { Migration20261122133500_sent_emails } from './Migration20261122133500_sent_emails.ts';
import { Migration20261122133600_invoice_numbers } from './Migration20261122133600_invoice_numbers.ts';
import { Migration20261122134000_catalog } from './Migration20261122134000_catalog.ts';
import { Migration20261122134146_events } from './Migration20261122134146_events.ts';
import { Migration20261122134432_payouts } from './Migration20261122134432_payouts.ts';
import { Migration20261122134500_payment_requests } from './Migration20261122134500_payment_requests.ts';
import { Migration20261122134700_webhooks } from './Migration20261122134700_webhooks.ts';
import { Migration20261122141000_subscription_lifecycle } from './Migration20261122141000_subscription_lifecycle.ts';
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
import { Migration20261124100000_test_clock_links } from './Migration20261124100000_test_clock_links.ts';
import { Migration20261124120000_account_logos } from './Migration20261124120000_account_logos.ts';
import { Migration20261125100000_test_clock_payouts } from './Migration20261125100000_test_clock_payouts.ts';
import { Migration20261126210000_payout_claims } from './Migration20261126210000_payout_claims.ts';
import { Migration20261126220000_owned_pending_funds } from './Migration20261126220000_owned_pending_funds.ts';
import { Migration20261126223000_pricing_schemes } from './Migration20261126223000_pricing_schemes.ts';
import { Migration20261126224000_pending_quantity } from './Migration20261126224000_pending_quantity.ts';
import { Migration20261126230000_one_off_invoices } from './Migration20261126230000_one_off_invoices.ts';
import { Migration20261126231000_subscription_items } from './Migration20261126231000_subscription_items.ts';
import { Migration20261127001500_taxes } from './Migration20261127001500_taxes.ts';
import { Migration20261127002000_subscriptions_plan_index } from './Migration20261127002000_subscriptions_plan_index.ts';
import { Migration20261127002100_customer_currency } from './Migration20261127002100_customer_currency.ts';
import { Migration20261127010000_customer_balances } from './Migration20261127010000_customer_balances.ts';
import { Migration20261127012000_discounts } from './Migration20261127012000_discounts.ts';
import { Migration20261127020000_credit_notes } from './Migration20261127020000_credit_notes.ts';
import { Migration20261127030000_invoice_discounts } from './Migration20261127030000_invoice_discounts.ts';
import { Migration20261127031000_usage } from './Migration20261127031000_usage.ts';
import { Migration20261127032000_metered_plans } from './Migration20261127032000_metered_plans.ts';
import { Migration20261127036000_events_related_object } from './Migration20261127036000_events_related_object.ts';
import { Migration20261127042000_usage_thresholds } from './Migration20261127042000_usage_thresholds.ts';
import { Migration20261127043000_customer_external_id } from './Migration20261127043000_customer_external_id.ts';
import { Migration20261127050000_billing_alerts } from './Migration20261127050000_billing_alerts.ts';
import { Migration20261127101000_usage_late_events } from './Migration20261127101000_usage_late_events.ts';
import { Migration20261127102000_invoice_billing_reason } from './Migration20261127102000_invoice_billing_reason.ts';
import { Migration20261127150000_test_clock_entries } from './Migration20261127150000_test_clock_entries.ts';
import { Migration20261127151000_test_clock_report_function } from './Migration20261127151000_test_clock_report_function.ts';
import { Migration20261127152000_test_clock_report_unlocked } from './Migration20261127152000_test_clock_report_unlocked.ts';

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
  { name: 'Migration20261124100000_test_clock_links', class: Migration20261124100000_test_clock_links },
  { name: 'Migration20261124120000_account_logos', class: Migration20261124120000_account_logos },
  { name: 'Migration20261125100000_test_clock_payouts', class: Migration20261125100000_test_clock_payouts },
  { name: 'Migration20261126210000_payout_claims', class: Migration20261126210000_payout_claims },
  { name: 'Migration20261126220000_owned_pending_funds', class: Migration20261126220000_owned_pending_funds },
  { name: 'Migration20261126223000_pricing_schemes', class: Migration20261126223000_pricing_schemes },
  { name: 'Migration20261126224000_pending_quantity', class: Migration20261126224000_pending_quantity },
  { name: 'Migration20261126230000_one_off_invoices', class: Migration20261126230000_one_off_invoices },
  { name: 'Migration20261126231000_subscription_items', class: Migration20261126231000_subscription_items },
  { name: 'Migration20261127002000_subscriptions_plan_index', class: Migration20261127002000_subscriptions_plan_index },
  { name: 'Migration20261127002100_customer_currency', class: Migration20261127002100_customer_currency },
  { name: 'Migration20261127010000_customer_balances', class: Migration20261127010000_customer_balances },
  { name: 'Migration20261127012000_discounts', class: Migration20261127012000_discounts },
  { name: 'Migration20261127001500_taxes', class: Migration20261127001500_taxes },
  { name: 'Migration20261127020000_credit_notes', class: Migration20261127020000_credit_notes },
  { name: 'Migration20261127030000_invoice_discounts', class: Migration20261127030000_invoice_discounts },
  { name: 'Migration20261127031000_usage', class: Migration20261127031000_usage },
  { name: 'Migration20261127032000_metered_plans', class: Migration20261127032000_metered_plans },
  { name: 'Migration20261127036000_events_related_object', class: Migration20261127036000_events_related_object },
  { name: 'Migration20261127050000_billing_alerts', class: Migration20261127050000_billing_alerts },
  { name: 'Migration20261127042000_usage_thresholds', class: Migration20261127042000_usage_thresholds },
  { name: 'Migration20261127043000_customer_external_id', class: Migration20261127043000_customer_external_id },
  { name: 'Migration20261127101000_usage_late_events', class: Migration20261127101000_usage_late_events },
  { name: 'Migration20261127102000_invoice_billing_reason', class: Migration20261127102000_invoice_billing_reason },
  { name: 'Migration20261127150000_test_clock_entries', class: Migration20261127150000_test_clock_entries },
  {
    name: 'Migration20261127151000_test_clock_report_function',
    class: Migration20261127151000_test_clock_report_function,
  },
  {
    name: 'Migration20261127152000_test_clock_report_unlocked',
    class: Migration20261127152000_test_clock_report_unlocked,
  },
];
