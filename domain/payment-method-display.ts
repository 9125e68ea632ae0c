/**
 * A customer's payment method as a person reads it ("Visa ending in 4242"), never its id
 * (`pm_card_visa` means nothing to a customer). The sandbox's test methods are known by id;
 * any other (a Stripe `pm_…`) is "a card on file": the engine keeps no card details.
 */
import { payPageMethods } from './payment-requests.ts';

export interface PaymentMethodDisplay {
  /** card or bank_account */
  type: 'card' | 'bank_account';
  /** "Visa", "Mastercard"; null when not known */
  brand: string | null;
  /** The last four digits; null when not known */
  last4: string | null;
  /** "Visa •••• 4242", "Bank account (test debit)", "Card on file" */
  label: string;
}

const sandboxBanks: Record<string, string> = {
  pm_bank_pendingSettles: '6789',
  pm_bank_pendingFails: '1116',
};

export function paymentMethodDisplay(paymentMethod: string | null | undefined): PaymentMethodDisplay | null {
  if (!paymentMethod) return null;
  const card = payPageMethods.find((method) => method.id === paymentMethod);
  if (card) {
    const [, brand, last4] = /^(\S+) •••• (\d{4})$/.exec(card.label)!;
    return { type: 'card', brand: brand!, last4: last4!, label: card.label };
  }
  const bankLast4 = sandboxBanks[paymentMethod];
  if (bankLast4)
    return { type: 'bank_account', brand: null, last4: bankLast4, label: `Bank account •••• ${bankLast4}` };
  return { type: 'card', brand: null, last4: null, label: 'Card on file' };
}
