import type { EntityManager } from '@mikro-orm/postgresql';

import { Event } from '../../db/entities/event.ts';
import type { EventType } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import { insertWithBalanceUpdates } from '../money/ledger.ts';
import { transactionBatch } from '../money/transaction-batch.ts';
import { insertRowsPart } from '../platform/row-inserts.ts';
import { currentTestClock, currentTime } from '../test-clocks/now.ts';

export interface EventInput {
  accountId: string;
  livemode: boolean;
  type: EventType;
  /** The resource as the API returns it (a serializer's output). */
  object: object;
  /** The transaction the change involved, or null (the payload always carries the key). */
  transactionId?: string | null;
  /** The changed fields as they were before (`data.previous_attributes`), on an update that says so. */
  previousAttributes?: Record<string, unknown>;
}

/**
 * Records one event on `em`, which must be the EntityManager of the transaction
 * that makes the change (an outbox): the row is inserted right away, inside that
 * transaction, so it commits or rolls back with the change. Usable from API
 * routes and activities alike. Returns the row.
 */
export async function recordEvent(em: EntityManager, input: EventInput): Promise<Event> {
  const [row] = await recordEvents(em, [input]);
  return row!;
}

/** Records several events of one change in one statement (see recordEvent), in the order given. */
export async function recordEvents(em: EntityManager, inputs: EventInput[]): Promise<Event[]> {
  const rows = eventRows(inputs);
  const batch = eventBatch.heldOn(em);
  if (batch) batch.push(...rows);
  else await insertEvents(em, rows);
  return rows as Event[];
}

/**
 * The rows recordEvents writes, for a caller that inserts them itself within a statement of its own (an invoice's
 * `invoice.created`, written with the invoice and its number: services/invoices/cycle-invoices.ts numberInvoice).
 */
export function eventRows(inputs: EventInput[]) {
  const createdAt = currentTime();
  return inputs.map((input) => ({
    id: newId('event'),
    accountId: input.accountId,
    livemode: input.livemode,
    type: input.type,
    transactionId: input.transactionId ?? null,
    data: {
      object: JSON.parse(JSON.stringify(input.object)) as Record<string, unknown>,
      ...(input.previousAttributes
        ? { previous_attributes: JSON.parse(JSON.stringify(input.previousAttributes)) as Record<string, unknown> }
        : {}),
    },
    createdAt,
    testClockId: currentTestClock()?.id ?? null,
    dispatchedAt: null,
  }));
}

type EventRow = Parameters<typeof insertEvents>[1][number];

async function insertEvents(
  em: EntityManager,
  rows: (Omit<Event, 'data'> & { data: Record<string, unknown> })[],
): Promise<void> {
  if (rows.length === 1) await em.insert(Event, rows[0]!);
  else if (rows.length > 1) await em.insertMany(Event, rows);
}

/**
 * The events held back on a database transaction's EntityManager by withEventBatch: inserted when it ends, in the
 * statement that applies the money held by an enclosing withBalanceUpdatesLast when there is one (services/money/ledger.ts).
 */
const eventBatch = transactionBatch<EventRow[]>(
  () => [],
  async (em, rows) => {
    if (rows.length > 0 && insertWithBalanceUpdates(em, insertRowsPart(em, Event, rows))) return;
    await insertEvents(em, rows);
  },
);

/**
 * Runs `work` on `tx` (a database transaction's EntityManager) with the events it
 * records held back and written in ONE insert when it is done, still inside the
 * transaction: a change that records events from several services (a renewal's
 * payment, its paid invoice and the subscription) pays one statement for them
 * instead of one each. Nothing reads events back inside the transaction, and a
 * failure rolls back the change with them either way. Their order is kept.
 */
export function withEventBatch<T>(tx: EntityManager, work: () => Promise<T>): Promise<T> {
  return eventBatch.run(tx, work);
}
