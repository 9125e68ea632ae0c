/**
 * Group commit for single meter events (POST /v1/meter_events, docs/usage.md#single-events).
 *
 * A request that carries one event used to cost one statement and one commit; under concurrency the
 * commits were the limit (68 events/s on a loaded machine). Here the single events that arrive within
 * a short window (`windowMs`, ~1 ms) for the same account and mode travel in one batch through the
 * store's one-statement ingest, so one commit holds many requests' events. Each request still answers
 * only after the commit holding its event (its promise resolves when the batch's ingest resolved):
 * a 2xx is still durable.
 *
 * Per event, as before: duplicates among the coalesced events are the store's (the first occurrence of
 * an identifier is accepted, the others answer 'duplicate'; the route then reads the stored event).
 * A batch whose statement fails (one event PostgreSQL cannot take, a NUL byte in a string, say) made
 * no change (one statement, autocommit): its events are sent again one by one, so only the requests
 * whose own event fails see the error.
 */
import type { IngestOutcome, MeterEventInput, UsageStore } from './store.ts';

interface Waiting {
  event: MeterEventInput;
  resolve: (outcome: IngestOutcome) => void;
  reject: (error: unknown) => void;
}

interface Pending {
  accountId: string;
  livemode: boolean;
  waiting: Waiting[];
  timer: NodeJS.Timeout | null;
}

export interface GroupCommitOptions {
  /** How long the first event of a group waits for others (ms). */
  windowMs: number;
  /** A group is sent at once when it reaches this many events. */
  maxBatch: number;
}

export const defaultGroupCommit: GroupCommitOptions = { windowMs: 1, maxBatch: 500 };

export class SingleEventCommitter {
  private readonly pending = new Map<string, Pending>();
  /** Statements sent (a measure of the coalescing: events / batches). */
  batches = 0;
  events = 0;

  private readonly store: Pick<UsageStore, 'ingest'>;
  private readonly options: GroupCommitOptions;

  constructor(store: Pick<UsageStore, 'ingest'>, options: GroupCommitOptions = defaultGroupCommit) {
    this.store = store;
    this.options = options;
  }

  /** Ingests one event with whatever others arrive in the window; resolves after the commit holding it. */
  ingestOne(q: { accountId: string; livemode: boolean; event: MeterEventInput }): Promise<IngestOutcome> {
    const key = `${q.accountId}\u0000${q.livemode ? 1 : 0}`;
    let group = this.pending.get(key);
    if (!group) {
      group = { accountId: q.accountId, livemode: q.livemode, waiting: [], timer: null };
      this.pending.set(key, group);
      const started = group;
      group.timer = setTimeout(() => this.flush(key, started), this.options.windowMs);
    }
    const promise = new Promise<IngestOutcome>((resolve, reject) =>
      group.waiting.push({ event: q.event, resolve, reject }),
    );
    if (group.waiting.length >= this.options.maxBatch) this.flush(key, group);
    return promise;
  }

  private flush(key: string, group: Pending): void {
    if (this.pending.get(key) !== group) return; // already sent (the timer of a group sent full)
    this.pending.delete(key);
    if (group.timer) clearTimeout(group.timer);
    void this.send(group.accountId, group.livemode, group.waiting);
  }

  private async send(accountId: string, livemode: boolean, waiting: Waiting[]): Promise<void> {
    this.batches++;
    this.events += waiting.length;
    try {
      const outcomes = await this.store.ingest({ accountId, livemode, events: waiting.map((w) => w.event) });
      waiting.forEach((w, i) => w.resolve(outcomes[i]!));
    } catch (error) {
      if (waiting.length === 1) {
        waiting[0]!.reject(error);
        return;
      }
      // Nothing of the failed statement was stored: each event alone, so the failure stays with its own request.
      await Promise.all(
        waiting.map(async (w) => {
          try {
            const [outcome] = await this.store.ingest({ accountId, livemode, events: [w.event] });
            w.resolve(outcome!);
          } catch (own) {
            w.reject(own);
          }
        }),
      );
    }
  }
}

const committers = new WeakMap<object, SingleEventCommitter>();

/** The process's committer of a store (one per store, so every request of the process shares its windows). */
export function singleEventCommitterFor(store: Pick<UsageStore, 'ingest'>): SingleEventCommitter {
  let committer = committers.get(store);
  if (!committer) {
    committer = new SingleEventCommitter(store);
    committers.set(store, committer);
  }
  return committer;
}
