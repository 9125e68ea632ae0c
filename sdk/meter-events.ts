/**
 * A batching client for meter events (docs/usage.md#batches): `add` events as they happen; they go
 * to POST /v1/meter_events/batch 1,000 at a time (or `maxBatch`), or every `flushIntervalMs`.
 * Every event gets its identifier when added (a random UUID unless it has one), so a batch that got
 * no answer (a timeout, a 5xx, the API restarting) is sent again whole and counts once.
 *
 *   import { createBillingClient } from 'billing-engine/client';
 *   import { createMeterEventBatcher } from 'billing-engine/meter-events';
 *   const usage = createMeterEventBatcher(createBillingClient({ baseUrl, apiKey }), { onRefused: (e) => console.warn(e) });
 *   usage.add({ event_name: 'api_tokens', customer: 'cus_…', payload: { tokens: 1250, model: 'gpt-small' } });
 *   await usage.close(); // flushes what is left
 */
import type { BillingClient, Schemas } from './client.ts';

export type MeterEventInput = Schemas['MeterEventInput'];
type BatchResult = Schemas['MeterEventBatchResult'];

export interface RefusedEvent {
  event: MeterEventInput;
  code: string;
  message: string;
}

export interface BatcherOptions {
  /** Events per request, 1 to 1,000 (the API's limit); default 1,000. */
  maxBatch?: number;
  /** Sends what is buffered at least this often (ms); default 1,000. 0: only when full or on flush(). */
  flushIntervalMs?: number;
  /** Attempts per batch on a network error, 429 or 5xx (the same batch, the same identifiers); default 6. */
  maxAttempts?: number;
  /** The first retry's delay (ms), doubling; default 200. */
  retryDelayMs?: number;
  /** An event the API refused (unknown meter or customer, bad value, out of window, period invoiced): it is not retried. */
  onRefused?: (refused: RefusedEvent) => void;
}

export interface FlushResult {
  accepted: number;
  duplicates: number;
  refused: RefusedEvent[];
}

export function createMeterEventBatcher(client: BillingClient, options: BatcherOptions = {}) {
  const maxBatch = Math.min(1000, Math.max(1, options.maxBatch ?? 1000));
  const maxAttempts = options.maxAttempts ?? 6;
  const retryDelayMs = options.retryDelayMs ?? 200;
  let buffer: MeterEventInput[] = [];
  // Batches go out one after another, in the order added.
  let chain: Promise<unknown> = Promise.resolve();

  async function send(events: MeterEventInput[]): Promise<FlushResult> {
    for (let attempt = 1; ; attempt++) {
      let retryable: string;
      try {
        const { data, error, response } = await client.POST('/v1/meter_events/batch', { body: { events } });
        if (data) return collect(events, data);
        if (response.status !== 429 && response.status < 500)
          throw new Error(`meter events batch refused (${response.status}): ${JSON.stringify(error)}`);
        retryable = `HTTP ${response.status}`;
      } catch (caught) {
        if (caught instanceof Error && caught.message.startsWith('meter events batch refused')) throw caught;
        retryable = String(caught);
      }
      if (attempt >= maxAttempts)
        throw new Error(`meter events batch not sent after ${attempt} attempts: ${retryable}`);
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs * 2 ** (attempt - 1)));
    }
  }

  function collect(events: MeterEventInput[], result: BatchResult): FlushResult {
    const refused: RefusedEvent[] = [];
    for (const row of result.data) {
      if (row.status !== 'refused') continue;
      const entry = {
        event: events[row.index]!,
        code: row.error?.code ?? 'invalid_request',
        message: row.error?.message ?? '',
      };
      refused.push(entry);
      options.onRefused?.(entry);
    }
    return { accepted: result.accepted, duplicates: result.duplicates, refused };
  }

  function flush(): Promise<FlushResult> {
    const events = buffer;
    buffer = [];
    const next = chain.then(() => (events.length ? send(events) : { accepted: 0, duplicates: 0, refused: [] }));
    chain = next.catch(() => {});
    return next;
  }

  const timer =
    options.flushIntervalMs === 0
      ? undefined
      : setInterval(() => void flush().catch(() => {}), options.flushIntervalMs ?? 1000);
  timer?.unref?.();

  return {
    /** Buffers an event (its identifier fixed now); sends a full batch at once. Resolves with that batch's result when it sent one. */
    add(event: MeterEventInput): Promise<FlushResult> | undefined {
      buffer.push({ ...event, identifier: event.identifier ?? crypto.randomUUID() });
      return buffer.length >= maxBatch ? flush() : undefined;
    },
    /** Sends what is buffered now. */
    flush,
    /** How many events wait in the buffer. */
    get pending(): number {
      return buffer.length;
    },
    /** Stops the timer and sends what is left. */
    async close(): Promise<FlushResult> {
      if (timer) clearInterval(timer);
      return flush();
    },
  };
}
