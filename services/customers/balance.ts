import type { EntityManager } from '@mikro-orm/postgresql';

import {
  CustomerBalance,
  CustomerBalanceTransaction,
  type CustomerBalanceTransactionType,
} from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import { serializeCustomerBalanceTransaction } from '../../objects/customer-balance-transaction.ts';
import { recordEvent } from '../events/record.ts';
import { currentTime } from '../test-clocks/now.ts';

/**
 * A customer's balance (Stripe's sign: negative is credit). Every movement locks the
 * customer's balance row in that currency first (lockCustomerBalance) and moves it in the
 * same database transaction as the change that causes it (an invoice applying a credit, a
 * credit note, an adjustment): one row lock decides, so two invoices never spend one credit.
 */

export interface BalanceScope {
  accountId: string;
  livemode: boolean;
  customerId: string;
  currency: string;
}

/**
 * The customer's balance in `currency` for an invoice about to use it: its row locked until
 * `tx` commits, or 0 with no lock when the customer never had a balance in that currency
 * (nothing to spend twice; most renewals, which then write nothing). A movement
 * (recordBalanceTransaction) creates the row under its own lock.
 */
export async function lockBalanceForInvoice(tx: EntityManager, scope: BalanceScope): Promise<number> {
  const [row] = await tx.execute<{ balance: string }[]>(
    `select balance from customer_balances where customer_id = ? and currency = ? for update`,
    [scope.customerId, scope.currency.toUpperCase()],
  );
  return row ? Number(row.balance) : 0;
}

/** Locks the customer's balance row in `currency` (creating it at 0) until `tx` commits, and answers the balance. */
export async function lockCustomerBalance(tx: EntityManager, scope: BalanceScope): Promise<number> {
  const [row] = await tx.execute<{ balance: string }[]>(
    `insert into customer_balances (customer_id, currency, account_id, livemode, balance, updated_at) values (?, ?, ?, ?, 0, now())
     on conflict (customer_id, currency) do update set updated_at = customer_balances.updated_at
     returning balance`,
    [scope.customerId, scope.currency.toUpperCase(), scope.accountId, scope.livemode],
  );
  return Number(row!.balance);
}

/** The customer's balances by currency (no lock: for reading). */
export async function customerBalances(em: EntityManager, customerId: string): Promise<Record<string, number>> {
  const rows = await em.find(CustomerBalance, { customerId }, { orderBy: { currency: 'asc' } });
  return Object.fromEntries(rows.map((row) => [row.currency, Number(row.balance)]));
}

export interface BalanceMovement extends BalanceScope {
  type: CustomerBalanceTransactionType;
  /** Minor units; negative credits the customer. */
  amount: number;
  invoiceId?: string | null;
  creditNoteId?: string | null;
  description?: string | null;
  /** Workflow or clock time of the change; now without it. */
  createdAt?: Date;
}

/**
 * Moves the customer's balance by `amount` and records the transaction and its
 * `customer_balance_transaction.created` event, on `tx` (the caller's database transaction).
 * Takes the balance row's lock itself (a caller that already holds it just re-enters it).
 */
export async function recordBalanceTransaction(
  tx: EntityManager,
  movement: BalanceMovement,
): Promise<CustomerBalanceTransaction> {
  if (!Number.isSafeInteger(movement.amount))
    throw new Error(`A balance movement of ${movement.amount} is not an integer of minor units.`);
  await lockCustomerBalance(tx, movement);
  const currency = movement.currency.toUpperCase();
  const [moved] = await tx.execute<{ balance: string }[]>(
    `update customer_balances set balance = balance + ?, updated_at = now() where customer_id = ? and currency = ? returning balance`,
    [movement.amount, movement.customerId, currency],
  );
  const row = tx.create(CustomerBalanceTransaction, {
    id: newId('customerBalanceTransaction'),
    accountId: movement.accountId,
    livemode: movement.livemode,
    customerId: movement.customerId,
    currency,
    type: movement.type,
    amount: movement.amount,
    endingBalance: Number(moved!.balance),
    invoiceId: movement.invoiceId ?? null,
    creditNoteId: movement.creditNoteId ?? null,
    description: movement.description ?? null,
    createdAt: movement.createdAt ?? currentTime(),
  });
  await tx.flush();
  await recordEvent(tx, {
    accountId: movement.accountId,
    livemode: movement.livemode,
    type: 'customer_balance_transaction.created',
    object: serializeCustomerBalanceTransaction(row),
  });
  return row;
}
