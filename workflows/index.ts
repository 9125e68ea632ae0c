export { subscriptionWorkflow } from './subscription.ts';
