import { z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import { decodeTime, encodeTime } from 'ulidx';

import { Event } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { eventTypes } from '../../domain/events.ts';
import { serializeEvent } from '../../objects/event.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import type { RequestLogBuffer, RequestLogLine } from '../request-log-buffer.ts';

export const streamPollMs = 250;
export const defaultHeartbeatMs = 15_000;
/**
 * How far back each poll looks again: an event another process stamped a moment
 * before the last one sent, but committed after it, is still sent (once).
 */
export const lateEventWindowMs = 5_000;
/** Open streams per account and mode, per API process. */
const maxStreamsPerTenant = 10;

function typeMatcher(raw: string | undefined): (type: string) => boolean {
  if (!raw) return () => true;
  const wanted = raw
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  for (const t of wanted) {
    const known = t.endsWith('.*')
      ? eventTypes.some((e) => e.startsWith(t.slice(0, -1)))
      : (eventTypes as readonly string[]).includes(t);
    if (!known)
      throw new ApiError(
        'invalid_request',
        `types: ${t} is not an event type of the catalog, nor a family such as invoice.*`,
      );
  }
  return (type) => wanted.some((t) => (t.endsWith('.*') ? type.startsWith(t.slice(0, -1)) : type === t));
}

const sseDoc = (path: string, summary: string, description: string, query: z.ZodObject) => ({
  method: 'get' as const,
  path,
  tags: ['CLI'],
  summary,
  description,
  request: { query },
  responses: {
    200: {
      description: 'A text/event-stream',
      // The schema of one event of the stream (comment lines such as `: heartbeat` are not events).
      content: {
        'text/event-stream': {
          schema: z
            .object({
              event: z.string().optional(),
              id: z.string().optional(),
              data: z.string().openapi({ description: 'JSON text' }),
              retry: z.number().int().optional(),
            })
            .openapi({ description: 'One server-sent event' }),
        },
      },
    },
  },
});

/**
 * GET /v1/events/stream and GET /v1/logs/stream: server-sent events for `billing listen`
 * and `billing logs tail`, in the caller's account and mode only.
 */
export function streamsApp({ sseHeartbeatMs, context: { orm } }: AppDeps, logs: RequestLogBuffer) {
  const heartbeatMs = sseHeartbeatMs ?? defaultHeartbeatMs;
  const open = new Map<string, number>();
  const claim = (key: string) => {
    const n = open.get(key) ?? 0;
    if (n >= maxStreamsPerTenant)
      throw new ApiError('rate_limited', `At most ${maxStreamsPerTenant} open streams per account and mode.`);
    open.set(key, n + 1);
    return () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
    };
  };

  const app = newOpenApiApp();
  app.openAPIRegistry.registerPath(
    sseDoc(
      '/events/stream',
      'Stream events as they are recorded (server-sent events)',
      "Each event of the caller's account and mode recorded after the stream opened is sent as `event: <type>`, `id: <event id>`, " +
        '`data: <the event as GET /v1/events/{id} returns it>`, each once, also when another process commits it up to 5 s late. `types` filters (comma-separated types or families such as `invoice.*`). ' +
        'A comment line (`: heartbeat`) every 15 s. Used by `billing listen`.',
      z.object({ types: z.string().optional() }),
    ),
  );
  app.openAPIRegistry.registerPath(
    sseDoc(
      '/logs/stream',
      'Stream the API requests of the account (server-sent events)',
      "Every request made in the caller's account and mode that this API process serves, once it is answered: " +
        '`event: request`, data `{ request_id, method, path, status, duration_ms, source, created_at }` where source is `cli`, `api_key`, `session` or `anonymous`. ' +
        'Starts with the last requests kept in memory when `recent=true`. Used by `billing logs tail`.',
      z.object({ recent: z.enum(['true', 'false']).optional() }),
    ),
  );

  app.get('/events/stream', async (c) => {
    const { accountId, livemode } = await accountScope(c, orm);
    const matches = typeMatcher(c.req.query('types'));
    const release = claim(`${accountId}|${livemode}`);
    const [latest] = await orm.em
      .fork()
      .find(Event, { accountId, livemode }, { orderBy: { id: 'desc' }, limit: 1, fields: ['id'] });
    // Events up to the latest one at connection time are not sent.
    const floor = latest?.id ?? '';
    return streamSSE(c, async (stream) => {
      let closed = false;
      stream.onAbort(() => {
        closed = true;
      });
      /** Ids sent within the window, with their time. */
      const sent = new Map<string, number>();
      let newest = floor ? decodeTime(floor.slice(floor.indexOf('_') + 1).toUpperCase()) : Date.now();
      try {
        await stream.write(': connected\n\n');
        let lastBeat = Date.now();
        while (!closed) {
          const windowStart = `evt_${encodeTime(Math.max(newest - lateEventWindowMs, 0), 10).toLowerCase()}`;
          let cursor = windowStart > floor ? windowStart : floor;
          for (;;) {
            const batch = await orm.em
              .fork()
              .find(Event, { accountId, livemode, id: { $gt: cursor } }, { orderBy: { id: 'asc' }, limit: 100 });
            for (const event of batch) {
              cursor = event.id;
              if (sent.has(event.id)) continue;
              const time = decodeTime(event.id.slice(event.id.indexOf('_') + 1).toUpperCase());
              sent.set(event.id, time);
              newest = Math.max(newest, time);
              if (matches(event.type))
                await stream.writeSSE({ event: event.type, id: event.id, data: JSON.stringify(serializeEvent(event)) });
            }
            if (batch.length < 100 || closed) break;
          }
          for (const [id, time] of sent) if (time < newest - 2 * lateEventWindowMs) sent.delete(id);
          if (Date.now() - lastBeat >= heartbeatMs) {
            await stream.write(': heartbeat\n\n');
            lastBeat = Date.now();
          }
          await stream.sleep(Math.min(streamPollMs, heartbeatMs));
        }
      } finally {
        release();
      }
    });
  });

  app.get('/logs/stream', async (c) => {
    const { accountId, livemode } = await accountScope(c, orm);
    const release = claim(`logs|${accountId}|${livemode}`);
    return streamSSE(c, async (stream) => {
      const queue: RequestLogLine[] = c.req.query('recent') === 'true' ? logs.recent(accountId, livemode) : [];
      let wake: (() => void) | undefined;
      const unsubscribe = logs.subscribe(accountId, livemode, (line) => {
        if (queue.length < 1000) queue.push(line);
        wake?.();
      });
      let closed = false;
      stream.onAbort(() => {
        closed = true;
        wake?.();
      });
      try {
        await stream.write(': connected\n\n');
        while (!closed) {
          while (queue.length > 0) {
            const line = queue.shift()!;
            await stream.writeSSE({ event: 'request', id: String(line.id), data: JSON.stringify(line) });
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, heartbeatMs);
          });
          wake = undefined;
          if (!closed && queue.length === 0) await stream.write(': heartbeat\n\n');
        }
      } finally {
        unsubscribe();
        release();
      }
    });
  });
  return app;
}
