import type { EntityManager } from '@mikro-orm/postgresql';

import { BankAccount, type BankAccountStatus, Payout } from '../../db/entities/index.ts';
import {
  type AccountHolderType,
  checkDestination,
  destinationFingerprint,
  type DestinationInput,
} from '../../domain/bank-accounts.ts';
import { ApiError } from '../../domain/errors.ts';
import type { EventType } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import type { SecretBox } from '../../domain/secret-box.ts';
import { serializeBankAccount } from '../../objects/bank-account.ts';
import { recordEvent } from '../events/record.ts';

export interface Scope {
  accountId: string;
  livemode: boolean;
}

/** Serializes changes to one account's destinations in one mode (the default per currency), for the transaction. */
export async function lockDestinations(tx: EntityManager, scope: Scope): Promise<void> {
  await tx
    .getConnection()
    .execute(
      `select pg_advisory_xact_lock(hashtext(?))`,
      [`bank_accounts:${scope.accountId}:${scope.livemode}`],
      'all',
      tx.getTransactionContext(),
    );
}

export async function recordBankAccountEvent(em: EntityManager, row: BankAccount, type: EventType): Promise<void> {
  await recordEvent(em, {
    accountId: row.accountId,
    livemode: row.livemode,
    type,
    object: serializeBankAccount(row),
    transactionId: null,
  });
}

export interface BankAccountKeys {
  /** Seals the full number (createSecretBox(AUTH_SECRET, 'bank-accounts')). */
  box: SecretBox;
  authSecret: string;
}

/**
 * Adds a destination after checking it (invalid_request naming the failed check);
 * the same account number twice in one account and mode is `conflict`, naming the
 * destination it already is. The first destination of a currency becomes its
 * default, as does one created with `default_for_currency: true`.
 */
export async function createBankAccount(
  em: EntityManager,
  keys: BankAccountKeys,
  scope: Scope,
  input: DestinationInput & {
    default_for_currency?: boolean | undefined;
    metadata?: Record<string, string> | undefined;
    id?: string;
  },
): Promise<BankAccount> {
  const checked = checkDestination(input);
  if (!checked.ok) throw new ApiError('invalid_request', checked.message);
  const value = checked.value;
  const fingerprint = destinationFingerprint(keys.authSecret, value.fingerprintMaterial);
  return em.transactional(async (tx) => {
    await lockDestinations(tx, scope);
    const same = await tx.findOne(BankAccount, { ...scope, fingerprint, currency: value.currency, deletedAt: null });
    if (same)
      throw new ApiError(
        'conflict',
        `This account is already a destination: ${same.id} (same fingerprint ${fingerprint}).`,
      );
    const hasDefault =
      (await tx.count(BankAccount, { ...scope, currency: value.currency, defaultForCurrency: true, deletedAt: null })) >
      0;
    const makeDefault = input.default_for_currency === true || !hasDefault;
    if (makeDefault && hasDefault)
      await tx.nativeUpdate(
        BankAccount,
        { ...scope, currency: value.currency, defaultForCurrency: true, deletedAt: null },
        { defaultForCurrency: false, updatedAt: new Date() },
      );
    const now = new Date();
    const row = tx.create(BankAccount, {
      id: input.id ?? newId('bankAccount'),
      ...scope,
      type: value.type,
      accountHolderName: input.account_holder_name,
      accountHolderType: input.account_holder_type ?? 'individual',
      country: value.country,
      currency: value.currency,
      secret: keys.box.seal(value.secret),
      last4: value.last4,
      fingerprint,
      routingNumber: value.routingNumber,
      sortCode: value.sortCode,
      bic: value.bic,
      emailMasked: value.emailMasked,
      defaultForCurrency: makeDefault,
      status: 'new',
      metadata: input.metadata ?? {},
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    });
    await tx.flush();
    await recordBankAccountEvent(tx, row, 'bank_account.created');
    return row;
  });
}

export async function findBankAccount(em: EntityManager, scope: Scope, id: string): Promise<BankAccount | null> {
  return em.findOne(BankAccount, { id, ...scope, deletedAt: null });
}

/**
 * Holder name and type, metadata, and `default_for_currency: true` (the previous
 * default of its currency stops being one). Turning the default off is refused:
 * make another the default instead.
 */
export async function updateBankAccount(
  em: EntityManager,
  scope: Scope,
  id: string,
  patch: {
    account_holder_name?: string | undefined;
    account_holder_type?: AccountHolderType | undefined;
    default_for_currency?: boolean | undefined;
    metadata?: Record<string, string> | undefined;
  },
): Promise<BankAccount | null> {
  return em.transactional(async (tx) => {
    await lockDestinations(tx, scope);
    const row = await tx.findOne(BankAccount, { id, ...scope, deletedAt: null });
    if (!row) return null;
    if (patch.default_for_currency === false && row.defaultForCurrency) {
      throw new ApiError(
        'invalid_request',
        `default_for_currency: ${row.id} is the default for ${row.currency}; make another destination the default instead.`,
      );
    }
    if (patch.default_for_currency === true && !row.defaultForCurrency) {
      await tx.nativeUpdate(
        BankAccount,
        { ...scope, currency: row.currency, defaultForCurrency: true, deletedAt: null },
        { defaultForCurrency: false, updatedAt: new Date() },
      );
      row.defaultForCurrency = true;
    }
    if (patch.account_holder_name !== undefined) row.accountHolderName = patch.account_holder_name;
    if (patch.account_holder_type !== undefined) row.accountHolderType = patch.account_holder_type;
    if (patch.metadata !== undefined) row.metadata = patch.metadata;
    row.updatedAt = new Date();
    await tx.flush();
    await recordBankAccountEvent(tx, row, 'bank_account.updated');
    return row;
  });
}

/**
 * Deletes a destination (payouts keep naming it). Refused (`conflict`) while a
 * payout to it is pending or in transit, and for the default of a currency that
 * has other destinations (make one of them the default first).
 */
export async function deleteBankAccount(em: EntityManager, scope: Scope, id: string): Promise<BankAccount | null> {
  return em.transactional(async (tx) => {
    await lockDestinations(tx, scope);
    const row = await tx.findOne(BankAccount, { id, ...scope, deletedAt: null });
    if (!row) return null;
    const open = await tx.count(Payout, { destinationId: row.id, status: { $in: ['pending', 'in_transit'] } });
    if (open > 0)
      throw new ApiError(
        'conflict',
        `${row.id} has ${open} payout(s) pending or in transit; delete it once they have ended.`,
      );
    if (row.defaultForCurrency) {
      const others = await tx.count(BankAccount, {
        ...scope,
        currency: row.currency,
        deletedAt: null,
        id: { $ne: row.id },
      });
      if (others > 0)
        throw new ApiError(
          'conflict',
          `${row.id} is the default for ${row.currency}; make another ${row.currency} destination the default first.`,
        );
    }
    row.deletedAt = new Date();
    row.defaultForCurrency = false;
    row.updatedAt = row.deletedAt;
    await tx.flush();
    await recordBankAccountEvent(tx, row, 'bank_account.deleted');
    return row;
  });
}

/** Sets a destination's status after a payout's outcome (verified by a paid payout, errored by an account failure), with its event. */
export async function setBankAccountStatus(tx: EntityManager, id: string, status: BankAccountStatus): Promise<void> {
  const row = await tx.findOne(BankAccount, { id });
  if (!row || row.status === status || row.deletedAt) return;
  row.status = status;
  row.updatedAt = new Date();
  await tx.flush();
  await recordBankAccountEvent(tx, row, 'bank_account.updated');
}
