import { Account } from './account.ts';
import { ApiKey } from './api-key.ts';
import { Charge } from './charge.ts';
import { Customer } from './customer.ts';
import { Invoice } from './invoice.ts';
import { Plan } from './plan.ts';
import { SandboxProcessorCharge } from './sandbox-processor-charge.ts';
import { LoginAttempt, RefreshToken, Session } from './session.ts';
import { Subscription } from './subscription.ts';
import { User } from './user.ts';

export { Account, ApiKey, Charge, Customer, Invoice, LoginAttempt, Plan, RefreshToken, SandboxProcessorCharge, Session, Subscription, User };
export type { AccountSettings, AccountStatus, AccountType } from './account.ts';
export { accountStatuses, accountTypes } from './account.ts';
export type { UserRole, UserStatus } from './user.ts';
export { userRoles, userStatuses } from './user.ts';
export type { InvoiceLine } from './invoice.ts';
export const entities = [Account, User, Session, RefreshToken, LoginAttempt, ApiKey, Customer, Plan, Subscription, Invoice, Charge, SandboxProcessorCharge];
