import { Charge } from './charge.ts';
import { Customer } from './customer.ts';
import { Invoice } from './invoice.ts';
import { Plan } from './plan.ts';
import { SandboxProcessorCharge } from './sandbox-processor-charge.ts';
import { Subscription } from './subscription.ts';

export { Charge, Customer, Invoice, Plan, SandboxProcessorCharge, Subscription };
export const entities = [Customer, Plan, Subscription, Invoice, Charge, SandboxProcessorCharge];
export type { InvoiceLine } from './invoice.ts';
