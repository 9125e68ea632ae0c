export { subscriptionWorkflow } from './subscription.ts';
export { paymentSettlementWorkflow } from './payment-settlement.ts';
