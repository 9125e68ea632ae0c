/**
 * An account's email notification preferences (SPEC.md: payout confirmations,
 * failed payments, subscription cancellations). Every sender reads them when it
 * is about to send; a key the account never set is on.
 *
 * - `payout_confirmations`: the email to the account when a payout is paid;
 * - `failed_payments`: the emails to customers at each failed subscription charge;
 * - `subscription_cancellations`: the email to a customer whose subscription was
 *   canceled, or paused when dunning ended in a pause.
 */
export const notificationPreferenceKeys = [
  'payout_confirmations',
  'failed_payments',
  'subscription_cancellations',
] as const;
export type NotificationPreference = (typeof notificationPreferenceKeys)[number];
export type NotificationPreferences = Record<NotificationPreference, boolean>;

export function notificationPreferences(settings: {
  notifications?: Partial<NotificationPreferences>;
}): NotificationPreferences {
  const set = settings.notifications ?? {};
  return {
    payout_confirmations: set.payout_confirmations ?? true,
    failed_payments: set.failed_payments ?? true,
    subscription_cancellations: set.subscription_cancellations ?? true,
  };
}
