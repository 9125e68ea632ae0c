import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Writes held back on a database transaction's EntityManager while some work goes on, and
 * written by `flush` once it is done, still inside the transaction (before the caller
 * commits). A run inside a run on the same EntityManager joins it: the outermost one
 * flushes; a run whose work throws flushes nothing (the transaction rolls back anyway).
 *
 * events.ts holds a change's events to write them in one insert (withEventBatch); ledger.ts
 * holds money in to apply it to the balance rows last (withBalanceUpdatesLast).
 */
export function transactionBatch<Held>(create: () => Held, flush: (tx: EntityManager, held: Held) => Promise<void>) {
  const open = new WeakMap<EntityManager, Held>();
  return {
    /** What is held on `tx` by a run in progress; undefined outside one (the caller writes at once). */
    heldOn: (tx: EntityManager): Held | undefined => open.get(tx),
    async run<T>(tx: EntityManager, work: () => Promise<T>): Promise<T> {
      if (open.has(tx)) return work();
      const held = create();
      open.set(tx, held);
      let result: T;
      try {
        result = await work();
      } finally {
        open.delete(tx);
      }
      await flush(tx, held);
      return result;
    },
  };
}
