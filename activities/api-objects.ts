/**
 * The API's own serializers, for events whose `data.object` is a resource exactly
 * as the API returns it. They live in the route modules, and those import
 * activities (to create payouts, cancel invoices, ...), so a static import from an
 * activity would close a module cycle whose outcome depends on which module loads
 * first. They are loaded on first use instead (ESM caches them after that).
 */
export const apiObjects = {
  transactions: () => import('../api/routes/transactions.ts'),
  invoices: () => import('../api/routes/invoices.ts'),
  payments: () => import('../api/routes/payments.ts'),
  paymentRequests: () => import('../api/routes/payment-requests.ts'),
  payouts: () => import('../api/routes/payouts.ts'),
};
