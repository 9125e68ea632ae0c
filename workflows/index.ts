export { subscriptionWorkflow } from './subscription.ts';
export { paymentSettlementWorkflow } from './payment-settlement.ts';
export { paymentRequestWorkflow } from './payment-request.ts';
export { recurringPaymentRequestWorkflow } from './recurring-payment-request.ts';
export { eventDispatchWorkflow, webhookDeliveryWorkflow } from './webhooks.ts';
export { payoutWorkflow } from './payout.ts';
export { maintenanceWorkflow } from './maintenance.ts';
export { fundsAvailabilityWorkflow } from './funds-availability.ts';
export { exportWorkflow } from './export.ts';
