/**
 * Meter events (docs/usage.md#events): POST /v1/meter_events (one), POST /v1/meter_events/batch
 * (up to 1,000, answered per event), GET /v1/meter_events/{identifier}, and
 * POST /v1/meter_events/{identifier}/cancel. Events are rows written by the usage store in one
 * statement per request; they never go through Temporal.
 *
 * The two ingestion routes are documented with zod schemas but read their bodies by hand
 * (domain/meter-events.ts): a zod parse of 1,000 events cost more than the insert.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';

import { ApiError, type ErrorCode } from '../../domain/errors.ts';
import { maxBatchEvents, type ParsedMeterEvent, parseMeterEvent } from '../../domain/meter-events.ts';
import { MeterEventSchema, serializeMeterEvent } from '../../objects/meter.ts';
import { checkUsageAlerts } from '../../services/usage/alerts.ts';
import { singleEventCommitterFor } from '../../services/usage/group-commit.ts';
import { usageStoreFor } from '../../services/usage/postgres-store.ts';
import type { IngestOutcome, RefusalCode } from '../../services/usage/store.ts';
import { checkUsageThresholds } from '../../services/usage/thresholds.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';

const refusalMessages: Record<RefusalCode, string> = {
  unknown_meter: 'No active meter has this event_name in this mode.',
  unknown_customer: 'No such customer in this mode.',
  invalid_value:
    "The payload lacks the meter's value property, or it is not a decimal of at most 12 integer digits and 6 decimals (a number or a decimal string).",
  timestamp_out_of_window:
    "timestamp: at most 35 days before now and 5 minutes after (now is the customer's test clock time when it lives on one).",
  period_invoiced: "The customer's usage up to this timestamp was already invoiced: the event would not be billed.",
};

const eventFields = {
  event_name: z
    .string()
    .min(1)
    .max(100)
    .openapi({ description: 'The event_name of an active meter', example: 'api_tokens' }),
  customer: z.string().min(1).max(64).openapi({
    description:
      "The customer: its id (cus_…) or its external_id (the merchant's own id, set on the customer); an id wins over another customer's equal external_id",
    example: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e',
  }),
  timestamp: z.union([z.number(), z.string()]).optional().openapi({
    description:
      "When it happened: unix seconds or an ISO 8601 instant; default now (the customer's test clock time on a clock). At most 35 days back and 5 minutes ahead",
    example: 1795392000,
  }),
  identifier: z.string().min(1).max(100).optional().openapi({
    description:
      'Unique within the account and mode: sent again (a retry, another batch), it counts once. Default: a generated one',
    example: 'req_7f3a9c2e',
  }),
  payload: z
    .record(z.string(), z.union([z.string(), z.number()]))
    .optional()
    .openapi({
      description:
        "The meter's value property (a number or decimal string, up to 6 decimals, |v| < 1e12) and dimension properties (strings); at most 20",
      example: { tokens: '1250', model: 'gpt-small' },
    }),
};
const MeterEventBody = z
  .object(eventFields)
  .strict()
  .openapi('MeterEventInput', {
    example: {
      event_name: 'api_tokens',
      customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e',
      timestamp: 1795392000,
      identifier: 'req_7f3a9c2e',
      payload: { tokens: '1250', model: 'gpt-small' },
    },
  });
const BatchBody = z
  .object({ events: z.array(MeterEventBody).min(1).max(maxBatchEvents) })
  .strict()
  .openapi({
    example: {
      events: [
        {
          event_name: 'api_tokens',
          customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e',
          identifier: 'req_7f3a9c2e',
          payload: { tokens: '1250', model: 'gpt-small' },
        },
        {
          event_name: 'api_tokens',
          customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e',
          identifier: 'req_7f3a9c2f',
          payload: { tokens: 310, model: 'gpt-large' },
        },
      ],
    },
  });
const BatchResultSchema = z
  .object({
    object: z.literal('billing.meter_event_batch'),
    data: z.array(
      z.object({
        index: z.number().int().openapi({ description: 'Its position in events', example: 0 }),
        identifier: z.string().nullable().openapi({
          description:
            'Its identifier (the generated one when it had none; null for an event whose identifier was malformed)',
          example: 'req_7f3a9c2e',
        }),
        status: z.enum(['accepted', 'duplicate', 'refused']).openapi({
          description:
            'accepted: stored and counted; duplicate: its identifier was already stored (counted once); refused: see error',
          example: 'accepted',
        }),
        billed_in: z.literal('next_invoice').optional().openapi({
          description:
            "Only on an accepted late event (stamped before a period already invoiced, the mode's late_events = bill_next_invoice): the subscription's next invoice bills it as a usage adjustment",
          example: 'next_invoice',
        }),
        error: z
          .object({
            code: z.enum([
              'invalid_request',
              'unknown_meter',
              'unknown_customer',
              'invalid_value',
              'timestamp_out_of_window',
              'period_invoiced',
            ]),
            message: z.string(),
          })
          .optional(),
      }),
    ),
    accepted: z.number().int().openapi({ example: 2 }),
    duplicates: z.number().int().openapi({ example: 0 }),
    refused: z.number().int().openapi({ example: 0 }),
  })
  .openapi('MeterEventBatchResult');
const identifierParam = z.object({
  identifier: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: 'identifier', in: 'path' }, example: 'req_7f3a9c2e' }),
});

const tags = ['Meter events'];
const routes = {
  create: createRoute({
    method: 'post',
    path: '/',
    tags,
    summary: 'Report usage: one meter event',
    description:
      'Committed when it answers 201. The same identifier again answers 200 with the stored event, counted once. Refused with 400 `unknown_meter`, `unknown_customer`, `invalid_value`, ' +
      '`timestamp_out_of_window` or `invalid_request`, and 409 `period_invoiced` when the usage up to its timestamp was already invoiced, ' +
      "unless the mode's late_events is bill_next_invoice: then it is accepted with `billed_in: next_invoice`, billed on the subscription's next invoice as a usage adjustment. For volume, POST /v1/meter_events/batch.",
    request: { body: { ...json(MeterEventBody), required: true } },
    responses: {
      200: { description: 'A duplicate: the event stored first', ...json(MeterEventSchema) },
      201: { description: 'Stored', ...json(MeterEventSchema) },
      ...errorResponses(400, 401, 409),
    },
  }),
  batch: createRoute({
    method: 'post',
    path: '/batch',
    tags,
    summary: 'Report usage: up to 1,000 meter events',
    description:
      'Answers 200 with one result per event, in order: accepted, duplicate (its identifier is stored already, or came earlier in this batch) or refused with its reason. ' +
      'A 200 means every accepted event is committed: a client that got no answer sends the whole batch again, and what was stored counts once. Its own body limit: 1 MB. ' +
      'A body that is not `{events: [1 to 1,000 objects]}` is a 400 and stores nothing.',
    request: { body: { ...json(BatchBody), required: true } },
    responses: {
      200: { description: 'One result per event', ...json(BatchResultSchema) },
      ...errorResponses(400, 401, 413),
    },
  }),
  get: createRoute({
    method: 'get',
    path: '/{identifier}',
    tags,
    summary: 'Retrieve a meter event by its identifier',
    request: { params: identifierParam },
    responses: { 200: { description: 'The event', ...json(MeterEventSchema) }, ...errorResponses(401, 404) },
  }),
  cancel: createRoute({
    method: 'post',
    path: '/{identifier}/cancel',
    tags,
    summary: 'Cancel a meter event',
    description:
      'It stops counting (cancelled_at is set). Idempotent. 409 `period_invoiced` once the usage up to its timestamp was invoiced (a late event: once an invoice billed it).',
    request: { params: identifierParam },
    responses: {
      200: { description: 'The cancelled event', ...json(MeterEventSchema) },
      ...errorResponses(401, 404, 409),
    },
  }),
};

/**
 * The body as JSON. jsonBodies (api/middleware/body.ts) has read and checked it as text already; parsing that text
 * here costs less than c.req.json(), which builds a Response around the cached text to parse it again.
 */
async function readJson(c: Context): Promise<unknown> {
  try {
    return JSON.parse(await c.req.text());
  } catch {
    throw new ApiError('invalid_request', 'The body must be a JSON object.');
  }
}

/**
 * After a batch committed: fires the usage alerts its customers reached (services/usage/alerts.ts).
 * Its failure does not fail the request (the events are committed); the customer's next batch checks again.
 */
async function checkAlerts(
  { context }: AppDeps,
  scope: { accountId: string; livemode: boolean },
  outcomes: IngestOutcome[],
): Promise<void> {
  const pairs: { customerId: string; meterId: string }[] = [];
  for (let i = 0; i < outcomes.length; i++) {
    const outcome = outcomes[i]!;
    if (outcome.status === 'accepted') pairs.push({ customerId: outcome.customerId, meterId: outcome.meterId });
  }
  try {
    await checkUsageAlerts(context.orm, scope, pairs);
  } catch (error) {
    context.logger.warn(
      { err: error, accountId: scope.accountId },
      'usage alerts: the check after a committed batch failed',
    );
  }
  // The same pass: progressive billing's thresholds of the batch's customers (one signal per crossing).
  try {
    await checkUsageThresholds(
      context,
      scope,
      pairs.map((p) => p.customerId),
    );
  } catch (error) {
    context.logger.warn(
      { err: error, accountId: scope.accountId },
      'usage thresholds: the check after a committed batch failed',
    );
  }
}

function refusal(outcome: IngestOutcome & { status: 'refused' }): ApiError {
  return new ApiError(outcome.code as ErrorCode, refusalMessages[outcome.code]);
}

export function meterEventsApp(deps: AppDeps) {
  const { orm } = deps.context;
  const app = newOpenApiApp();
  for (const route of Object.values(routes)) app.openAPIRegistry.registerPath(route);

  app.post('/batch', async (c) => {
    const { accountId, livemode } = await accountScope(c, orm);
    const body = (await readJson(c)) as { events?: unknown } | null;
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw new ApiError('invalid_request', 'The body must be a JSON object: {"events": [...]}.');
    for (const key in body)
      if (key !== 'events') throw new ApiError('invalid_request', `${key}: not a field of a batch (events).`);
    const events = body.events;
    if (!Array.isArray(events) || events.length === 0 || events.length > maxBatchEvents)
      throw new ApiError('invalid_request', `events: required, an array of 1 to ${maxBatchEvents} meter events.`);
    type Result = {
      index: number;
      identifier: string | null;
      status: 'accepted' | 'duplicate' | 'refused';
      billed_in?: 'next_invoice';
      error?: { code: string; message: string };
    };
    const data = new Array<Result>(events.length);
    const valid: ParsedMeterEvent[] = [];
    const positions: number[] = [];
    for (let index = 0; index < events.length; index++) {
      const parsed = parseMeterEvent(events[index]);
      if (typeof parsed === 'string') {
        const raw = (events[index] as { identifier?: unknown } | null)?.identifier;
        data[index] = {
          index,
          identifier: typeof raw === 'string' && raw.length <= 100 ? raw : null,
          status: 'refused',
          error: { code: 'invalid_request', message: parsed },
        };
      } else {
        valid.push(parsed);
        positions.push(index);
      }
    }
    const outcomes = await usageStoreFor(orm).ingest({ accountId, livemode, events: valid });
    await checkAlerts(deps, { accountId, livemode }, outcomes);
    let accepted = 0;
    let duplicates = 0;
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i]!;
      const index = positions[i]!;
      if (outcome.status === 'refused')
        data[index] = {
          index,
          identifier: outcome.identifier,
          status: 'refused',
          error: { code: outcome.code, message: refusalMessages[outcome.code] },
        };
      else {
        if (outcome.status === 'accepted') accepted++;
        else duplicates++;
        data[index] = {
          index,
          identifier: outcome.identifier,
          status: outcome.status,
          ...(outcome.status === 'accepted' && outcome.late ? { billed_in: 'next_invoice' as const } : {}),
        };
      }
    }
    return c.json(
      {
        object: 'billing.meter_event_batch' as const,
        data,
        accepted,
        duplicates,
        refused: events.length - accepted - duplicates,
      },
      200,
    );
  });

  app.post('/', async (c) => {
    const { accountId, livemode } = await accountScope(c, orm);
    const parsed = parseMeterEvent(await readJson(c));
    if (typeof parsed === 'string') throw new ApiError('invalid_request', parsed);
    const store = usageStoreFor(orm);
    // Coalesced with the other single events of the moment into one statement and commit (group commit); answered after that commit.
    const outcome = await singleEventCommitterFor(store).ingestOne({ accountId, livemode, event: parsed });
    if (outcome.status === 'refused') throw refusal(outcome);
    await checkAlerts(deps, { accountId, livemode }, [outcome]);
    if (outcome.status === 'accepted') {
      const { meterId, customerId, timestamp, receivedAt } = outcome;
      const event = {
        identifier: parsed.identifier,
        meterId,
        eventName: parsed.eventName,
        customerId,
        timestamp,
        payload: parsed.payload,
        createdAt: receivedAt,
        cancelledAt: null,
        ...(outcome.late ? { late: { invoiceId: null } } : {}),
      };
      return c.json(serializeMeterEvent(event, livemode), 201);
    }
    const stored = await store.find({ accountId, livemode, identifier: parsed.identifier });
    if (!stored) throw new ApiError('conflict', 'This identifier is taken by an event being written; send it again.');
    return c.json(serializeMeterEvent(stored, livemode), 200);
  });

  app.get('/:identifier', async (c) => {
    const { accountId, livemode } = await accountScope(c, orm);
    const identifier = c.req.param('identifier');
    const stored = await usageStoreFor(orm).find({ accountId, livemode, identifier });
    if (!stored) throw new ApiError('not_found', 'No such meter event.');
    return c.json(serializeMeterEvent(stored, livemode), 200);
  });

  app.post('/:identifier/cancel', async (c) => {
    const { accountId, livemode } = await accountScope(c, orm);
    const identifier = c.req.param('identifier');
    const outcome = await usageStoreFor(orm).cancel({ accountId, livemode, identifier });
    if (outcome.status === 'not_found') throw new ApiError('not_found', 'No such meter event.');
    if (outcome.status === 'period_invoiced')
      throw new ApiError(
        'period_invoiced',
        "This event's usage period was already invoiced: it can no longer be cancelled.",
      );
    return c.json(serializeMeterEvent(outcome.event, livemode), 200);
  });
  return app;
}
