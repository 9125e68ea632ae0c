/**
 * Group commit for single meter events (POST /v1/meter_events, docs/usage.md#single-events).
 *
 * A request that carries one event used to cost one statement and one commit; under concurrency the
 * commits were the limit (68 events/s on a loaded machine). Here the single events of one account and mode
 * travel in batches through the store's one-statement ingest, so one commit holds many requests' events:
 * - while fewer than `maxInFlight` of the group's statements are running, the events that arrived in this turn of
 *   the event loop (after `windowMs`, when set) are sent at once: a lone event waits for no timer;
 * - while `maxInFlight` are running, arrivals wait, and the first statement to finish sends them all as one.
 * So the busier the route, the more events a statement carries (PostgreSQL's cost per statement is mostly
 * fixed: ~850 µs for one event, ~1,100 µs for eight; docs/usage.md#measured), and an idle one adds no delay.
 * Each request still answers only after the commit holding its event (its promise resolves when the batch's
 * ingest resolved): a 2xx is still durable.
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

/** The events of one account and mode waiting for their statement, and that group's statements under way. */
interface Group {
  accountId: string;
  livemode: boolean;
  waiting: Waiting[];
  /** A send of `waiting` is scheduled (setImmediate or the window's timer). */
  scheduled: boolean;
  inFlight: number;
}

export interface GroupCommitOptions {
  /** 0: events are sent on the next turn of the event loop; more: the first event of a batch waits this long (ms) for others. */
  windowMs: number;
  /** A batch is sent at once when it reaches this many events. */
  maxBatch: number;
  /** At most this many statements of one account and mode at a time; arrivals meanwhile wait for one to finish. */
  maxInFlight: number;
}

export const defaultGroupCommit: GroupCommitOptions = { windowMs: 0, maxBatch: 500, maxInFlight: 4 };

export class SingleEventCommitter {
  private readonly groups = new Map<string, Group>();
  /** Statements sent (a measure of the coalescing: events / batches). */
  batches = 0;
  events = 0;

  private readonly store: Pick<UsageStore, 'ingest'>;
  private readonly options: GroupCommitOptions;

  constructor(store: Pick<UsageStore, 'ingest'>, options: Partial<GroupCommitOptions> = {}) {
    this.store = store;
    this.options = { ...defaultGroupCommit, ...options };
  }

  /** Ingests one event with whatever others arrive meanwhile; resolves after the commit holding it. */
  ingestOne(q: { accountId: string; livemode: boolean; event: MeterEventInput }): Promise<IngestOutcome> {
    const key = `${q.accountId}\u0000${q.livemode ? 1 : 0}`;
    let group = this.groups.get(key);
    if (!group) {
      group = { accountId: q.accountId, livemode: q.livemode, waiting: [], scheduled: false, inFlight: 0 };
      this.groups.set(key, group);
    }
    const promise = new Promise<IngestOutcome>((resolve, reject) =>
      group.waiting.push({ event: q.event, resolve, reject }),
    );
    if (group.waiting.length >= this.options.maxBatch) this.flush(key, group);
    else this.schedule(key, group);
    return promise;
  }

  /** Sends the group's waiting events soon, unless a send is scheduled or its statements are all taken (their end sends). */
  private schedule(key: string, group: Group): void {
    if (group.scheduled || group.waiting.length === 0 || group.inFlight >= this.options.maxInFlight) return;
    group.scheduled = true;
    const send = () => {
      group.scheduled = false;
      this.flush(key, group);
    };
    if (this.options.windowMs > 0) setTimeout(send, this.options.windowMs);
    else setImmediate(send);
  }

  private flush(key: string, group: Group): void {
    if (group.waiting.length === 0) return;
    const waiting = group.waiting;
    group.waiting = [];
    group.inFlight++;
    void this.send(group.accountId, group.livemode, waiting).finally(() => {
      group.inFlight--;
      if (group.waiting.length > 0) this.schedule(key, group);
      else if (group.inFlight === 0 && !group.scheduled) this.groups.delete(key);
    });
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

/** The process's committer of a store (one per store, so every request of the process shares its batches). */
export function singleEventCommitterFor(store: Pick<UsageStore, 'ingest'>): SingleEventCommitter {
  let committer = committers.get(store);
  if (!committer) {
    committer = new SingleEventCommitter(store);
    committers.set(store, committer);
  }
  return committer;
}
