import { Account } from './account.ts';
import { AccountLogo } from './account-logo.ts';
import { AccountModeSettings } from './account-mode-settings.ts';
import { ApiKey } from './api-key.ts';
import { BankAccount } from './bank-account.ts';
import { Charge } from './charge.ts';
import { CreditNote } from './credit-note.ts';
import { Customer } from './customer.ts';
import { CustomerBalance, CustomerBalanceTransaction } from './customer-balance.ts';
import { Coupon, Discount, PromotionCode } from './discount.ts';
import { Event } from './event.ts';
import { Export } from './export.ts';
import { IdempotencyKey } from './idempotency-key.ts';
import { Invoice, InvoiceNumberCounter } from './invoice.ts';
import { InvoiceItem } from './invoice-item.ts';
import { AccountBalance, BalanceTransaction, LedgerEntry } from './ledger.ts';
import { Meter } from './meter.ts';
import { PaymentRequest, RecurringPaymentRequest } from './payment-request.ts';
import { Payout } from './payout.ts';
import { PayoutHold, PayoutSettings, SandboxPayoutTransfer, TestClockPayoutSettings } from './payout-settings.ts';
import { Plan } from './plan.ts';
import { ProcessorEvent } from './processor-event.ts';
import { Product } from './product.ts';
import { SandboxProcessorCharge } from './sandbox-processor-charge.ts';
import { SandboxProcessorRefund } from './sandbox-processor-refund.ts';
import { SentEmail } from './sent-email.ts';
import { LoginAttempt, RefreshToken, Session } from './session.ts';
import { Subscription } from './subscription.ts';
import { CustomerTaxId, SubscriptionTaxRates, TaxRate } from './tax-rate.ts';
import { TestClock } from './test-clock.ts';
import { Transaction } from './transaction.ts';
import { User } from './user.ts';
import { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from './webhook.ts';

export { BalanceTransaction };
export type { BalanceTransactionStatus, BalanceTransactionType, LedgerAccount } from './ledger.ts';
export { balanceTransactionStatuses, balanceTransactionTypes } from './ledger.ts';
export {
  Account,
  AccountBalance,
  AccountModeSettings,
  ApiKey,
  Charge,
  Customer,
  IdempotencyKey,
  Invoice,
  InvoiceNumberCounter,
  LedgerEntry,
  LoginAttempt,
  Plan,
  RefreshToken,
  SandboxProcessorCharge,
  SentEmail,
  Session,
  Subscription,
  Transaction,
  User,
};
export { Product };
export { Meter, type MeterAggregation, meterAggregations, type MeterStatus, meterStatuses } from './meter.ts';
export { AccountLogo };
export { ProcessorEvent, SandboxProcessorRefund };
export { Event };
export { WebhookAttempt, WebhookDelivery, WebhookEndpoint };
export type { WebhookDeliveryStatus } from './webhook.ts';
export { BankAccount, Payout, PayoutHold, PayoutSettings, SandboxPayoutTransfer, TestClockPayoutSettings };
export type { BankAccountStatus } from './bank-account.ts';
export { bankAccountStatuses } from './bank-account.ts';
export type { PayoutMethod, PayoutStatus } from './payout.ts';
export { payoutMethods, payoutStatuses } from './payout.ts';
export { PaymentRequest, RecurringPaymentRequest };
export type { AccountSettings, AccountStatus, AccountType, CustomerPortalPermissions } from './account.ts';
export { accountStatuses, accountTypes } from './account.ts';
export type { InvoiceLine, InvoiceStatus } from './invoice.ts';
export type { CollectionMethod } from './invoice.ts';
export { collectionMethods, invoiceStatuses } from './invoice.ts';
export type { UserRole, UserStatus } from './user.ts';
export { userRoles, userStatuses } from './user.ts';
export { InvoiceItem };
export {
  CreditNote,
  type CreditNoteLine,
  type CreditNoteReason,
  creditNoteReasons,
  type CreditNoteStatus,
  creditNoteStatuses,
} from './credit-note.ts';
export { Coupon, type CouponDuration, couponDurations, Discount, PromotionCode } from './discount.ts';
export { CustomerTaxId, SubscriptionTaxRates, TaxRate };
export type { CustomerAddress } from './customer.ts';
export {
  CustomerBalance,
  CustomerBalanceTransaction,
  type CustomerBalanceTransactionType,
  customerBalanceTransactionTypes,
} from './customer-balance.ts';
export {
  Export,
  type ExportFormat,
  exportFormats,
  type ExportResource,
  exportResources,
  type ExportStatus,
  exportStatuses,
} from './export.ts';
export { TestClock, type TestClockStatus, testClockStatuses } from './test-clock.ts';
export type { RiskLevel, TransactionStatus, TransactionType } from './transaction.ts';
export { riskLevels, transactionStatuses, transactionTypes } from './transaction.ts';
export const entities = [
  Account,
  AccountLogo,
  AccountModeSettings,
  User,
  Session,
  RefreshToken,
  LoginAttempt,
  ApiKey,
  Customer,
  CreditNote,
  TaxRate,
  CustomerTaxId,
  SubscriptionTaxRates,
  CustomerBalance,
  CustomerBalanceTransaction,
  Plan,
  Product,
  Subscription,
  Invoice,
  InvoiceNumberCounter,
  InvoiceItem,
  Charge,
  SandboxProcessorCharge,
  SandboxProcessorRefund,
  ProcessorEvent,
  Transaction,
  LedgerEntry,
  AccountBalance,
  BalanceTransaction,
  IdempotencyKey,
  SentEmail,
  Event,
  WebhookEndpoint,
  WebhookDelivery,
  WebhookAttempt,
  Payout,
  BankAccount,
  PayoutSettings,
  TestClockPayoutSettings,
  PayoutHold,
  SandboxPayoutTransfer,
  PaymentRequest,
  RecurringPaymentRequest,
  Export,
  TestClock,
  Coupon,
  PromotionCode,
  Discount,
  Meter,
];
