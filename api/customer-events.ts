import type { Customer } from '../db/entities/index.ts';
import type { ApiDeps } from './deps.ts';

/**
 * Called by the customer update endpoints (PATCH and POST /v1/customers/{id}) after
 * the update is saved, whenever the request sets `payment_method` — also to the
 * value it already had, because a customer who fixed the card behind a decline
 * (funds added, bank called) re-enters the same method and expects a retry.
 * `customer.paymentMethod` is the new method; it may be null (removed).
 *
 * THE PLACE for "updating the payment method retries at once" (issue 5, dunning):
 * signal every past-due subscription of this customer so that its workflow charges
 * now instead of at the next scheduled retry. For now it signals nothing.
 *
 * It runs inside the request: an error thrown here answers 500 although the update
 * is saved (a retry of the same PATCH calls it again, see above).
 */
export async function notifyPaymentMethodUpdated(deps: ApiDeps, customer: Customer): Promise<void> {
  void deps;
  void customer;
}
