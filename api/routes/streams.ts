import { z } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import { Event } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { eventTypes } from '../../domain/events.ts';
import { serializeEvent } from '../../objects/event.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import type { RequestLogBuffer, RequestLogLine } from '../request-log-buffer.ts';

export const streamPollMs = 250;
export const heartbeatMs = 15_000;
/** Open streams per account and mode, per API process. */
const maxStreamsPerTenant = 10;

function typeMatcher(raw: string | undefined): (type: string) => boolean {
  if (!raw) return () => true;
  const wanted = raw.split(',').map((t) => t.trim()).filter(Boolean);
  for (const t of wanted) {
    const known = t.endsWith('.*') ? eventTypes.some((e) => e.startsWith(t.slice(0, -1))) : (eventTypes as readonly string[]).includes(t);
    if (!known) throw new ApiError('invalid_request', `types: ${t} is not an event type of the catalog, nor a family such as invoice.*`);
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
  responses: { 200: { description: 'A text/event-stream', content: { 'text/event-stream': { schema: z.string() } } } },
});

/**
 * GET /v1/events/stream and GET /v1/logs/stream: server-sent events for `billing listen`
 * and `billing logs tail`, in the caller's account and mode only.
 */
export function streamsApp({ orm }: ApiDeps, logs: RequestLogBuffer) {
  const open = new Map<string, number>();
  const claim = (key: string) => {
    const n = open.get(key) ?? 0;
    if (n >= maxStreamsPerTenant) throw new ApiError('rate_limited', `At most ${maxStreamsPerTenant} open streams per account and mode.`);
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
      'Each event of the caller\'s account and mode recorded after the stream opened is sent as `event: <type>`, `id: <event id>`, ' +
        '`data: <the event as GET /v1/events/{id} returns it>`. `types` filters (comma-separated types or families such as `invoice.*`). ' +
        'A comment line (`: heartbeat`) every 15 s. Used by `billing listen`.',
      z.object({ types: z.string().optional() }),
    ),
  );
  app.openAPIRegistry.registerPath(
    sseDoc(
      '/logs/stream',
      'Stream the API requests of the account (server-sent events)',
      'Every request made in the caller\'s account and mode that this API process serves, once it is answered: ' +
        '`event: request`, data `{ request_id, method, path, status, duration_ms, source, created_at }` where source is `cli`, `api_key`, `session` or `anonymous`. ' +
        'Starts with the last requests kept in memory when `recent=true`. Used by `billing logs tail`.',
      z.object({ recent: z.enum(['true', 'false']).optional() }),
    ),
  );

  app.get('/events/stream', async (c) => {
    const { accountId, livemode } = await accountScope(c, orm);
    const matches = typeMatcher(c.req.query('types'));
    const release = claim(`${accountId}|${livemode}`);
    const [latest] = await orm.em.fork().find(Event, { accountId, livemode }, { orderBy: { id: 'desc' }, limit: 1, fields: ['id'] });
    let lastId = latest?.id ?? '';
    return streamSSE(c, async (stream) => {
      let closed = false;
      stream.onAbort(() => {
        closed = true;
      });
      try {
        await stream.write(': connected\n\n');
        let lastBeat = Date.now();
        while (!closed) {
          const batch = await orm.em.fork().find(Event, { accountId, livemode, id: { $gt: lastId } }, { orderBy: { id: 'asc' }, limit: 100 });
          for (const event of batch) {
            lastId = event.id;
            if (matches(event.type)) await stream.writeSSE({ event: event.type, id: event.id, data: JSON.stringify(serializeEvent(event)) });
          }
          if (Date.now() - lastBeat >= heartbeatMs) {
            await stream.write(': heartbeat\n\n');
            lastBeat = Date.now();
          }
          if (batch.length < 100) await stream.sleep(streamPollMs);
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
