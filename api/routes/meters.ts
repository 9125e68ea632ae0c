/**
 * Billing meters (docs/usage.md#meters): create, list, read, rename, deactivate, reactivate, and a
 * customer's usage summaries (GET /v1/meters/{id}/event_summaries, Stripe's names).
 */
import { createRoute, z } from '@hono/zod-openapi';

import { Meter, meterAggregations } from '../../db/entities/index.ts';
import { Customer } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { MeterEventSummarySchema, MeterSchema, serializeMeter, serializeSummary } from '../../objects/meter.ts';
import { createMeter, findOwnMeter, meterRef, renameMeter, setMeterStatus } from '../../services/usage/meters.ts';
import { summaryWindows, usageStoreFor } from '../../services/usage/postgres-store.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, listSchema, oneCursor } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

/** A payload property name: what event payloads carry (letters, digits, _ - . ; at most 100). */
const propertyName = z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'letters, digits, _, - and . (1 to 100 characters)');
/** At most this many windows in one summaries answer (an hour window: 41 days). */
export const maxSummaryWindows = 1000;

const CreateMeterBody = z
  .object({
    display_name: z.string().min(1).max(250),
    event_name: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'letters, digits, _, -, . and : (1 to 100 characters)')
      .openapi({ description: "The events it counts; unique among the mode's active meters" }),
    aggregation: z
      .enum(meterAggregations)
      .openapi({ description: 'count, sum, max, unique_count, last or weighted_sum (docs/usage.md#aggregations)' }),
    value_property: propertyName.optional().openapi({
      description:
        'The payload property holding the value; default "value". For unique_count: the property whose distinct values are counted. Ignored by count',
    }),
    group_by: z
      .array(propertyName)
      .max(3)
      .optional()
      .openapi({ description: 'Payload properties usage can be grouped by (at most 3), e.g. ["model"]' }),
  })
  .strict()
  .openapi({
    example: {
      display_name: 'API tokens',
      event_name: 'api_tokens',
      aggregation: 'sum',
      value_property: 'tokens',
      group_by: ['model'],
    },
  });

const UpdateMeterBody = z
  .object({ display_name: z.string().min(1).max(250) })
  .strict()
  .openapi({ example: { display_name: 'LLM tokens' } });

const ListQuery = z
  .object({
    status: z.enum(['active', 'inactive']).optional(),
    event_name: z.string().min(1).max(100).optional(),
    ...cursorQuery('meter'),
  })
  .strict()
  .refine(...oneCursor);

const unixSeconds = z.coerce.number().int().min(0).max(253402300799);
const SummaryQuery = z
  .object({
    customer: z.string().min(1).max(64).openapi({
      description:
        "The customer: its id (cus_…) or its external_id (the merchant's own id, set on the customer), as in meter events; an id wins over another customer's equal external_id",
      example: 'user_4821',
    }),
    start_time: unixSeconds.openapi({ description: 'Unix seconds, inclusive', example: 1795392000 }),
    end_time: unixSeconds.openapi({ description: 'Unix seconds, exclusive; after start_time', example: 1798070400 }),
    group_by: z.string().max(310).optional().openapi({
      description: "Comma-separated properties of the meter's group_by: one summary per combination of their values",
      example: 'model',
    }),
    value_grouping_window: z
      .enum(['hour', 'day'])
      .optional()
      .openapi({
        description: `Cut [start_time, end_time) at every UTC hour or day: one summary per window (at most ${maxSummaryWindows} windows)`,
      }),
  })
  .strict()
  .refine((q) => q.end_time > q.start_time, { message: 'must be after start_time', path: ['end_time'] });

const tags = ['Meters'];
const routes = {
  create: createRoute({
    method: 'post',
    path: '/',
    tags,
    summary: 'Create a meter',
    description:
      "How events named event_name aggregate over a period. event_name is unique among the mode's active meters (409 `conflict`). Records `billing.meter.created`. Takes JSON or a form body.",
    request: { body: { ...json(CreateMeterBody), required: true } },
    responses: { 201: { description: 'Created', ...json(MeterSchema) }, ...errorResponses(400, 401, 409) },
  }),
  list: listRoute({ tags, summary: 'List meters, newest first', query: ListQuery, item: MeterSchema }),
  get: createRoute({
    method: 'get',
    path: '/{id}',
    tags,
    summary: 'Retrieve a meter',
    request: { params: idParam('mtr') },
    responses: { 200: { description: 'The meter', ...json(MeterSchema) }, ...errorResponses(401, 404) },
  }),
  update: createRoute({
    method: 'post',
    path: '/{id}',
    tags,
    summary: 'Rename a meter (its display_name; nothing else changes)',
    description: 'Records `billing.meter.updated` with the name before in previous_attributes.',
    request: { params: idParam('mtr'), body: { ...json(UpdateMeterBody), required: true } },
    responses: { 200: { description: 'The meter', ...json(MeterSchema) }, ...errorResponses(400, 401, 404) },
  }),
  deactivate: createRoute({
    method: 'post',
    path: '/{id}/deactivate',
    tags,
    summary: 'Deactivate a meter',
    description:
      'Events naming it are refused from then on (`unknown_meter`); its events and summaries stay. Records `billing.meter.deactivated` (none when it already was inactive).',
    request: { params: idParam('mtr') },
    responses: { 200: { description: 'The meter', ...json(MeterSchema) }, ...errorResponses(401, 404) },
  }),
  reactivate: createRoute({
    method: 'post',
    path: '/{id}/reactivate',
    tags,
    summary: 'Reactivate a meter',
    description:
      'It counts its events again. 409 `conflict` while another active meter has its event_name. Records `billing.meter.reactivated`.',
    request: { params: idParam('mtr') },
    responses: { 200: { description: 'The meter', ...json(MeterSchema) }, ...errorResponses(401, 404, 409) },
  }),
  summaries: createRoute({
    method: 'get',
    path: '/{id}/event_summaries',
    tags,
    summary: "A customer's usage on a meter",
    description:
      "The meter's aggregation of the customer's events (cancelled ones excluded) over [start_time, end_time): one summary, or one per UTC hour or day with value_grouping_window, " +
      'and per combination of the group_by values. `customer` is its id or its external_id; the summaries name its id. An event is visible here once its POST answered.',
    request: { params: idParam('mtr'), query: SummaryQuery },
    responses: {
      200: { description: 'The summaries, oldest window first', ...json(listSchema(MeterEventSummarySchema)) },
      ...errorResponses(400, 401, 404),
    },
  }),
};

export function metersApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp()
    .openapi(routes.create, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeMeter(await createMeter(orm.em.fork(), { accountId, livemode }, c.req.valid('json'))),
        201,
      );
    })
    .openapi(routes.list, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const query = c.req.valid('query');
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.status) where.status = query.status;
      if (query.event_name) where.eventName = query.event_name;
      const { page, hasMore } = await keysetPage(orm.em.fork(), Meter, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializeMeter), has_more: hasMore }, 200);
    })
    .openapi(routes.get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeMeter(await findOwnMeter(orm.em.fork(), { accountId, livemode }, c.req.valid('param').id)),
        200,
      );
    })
    .openapi(routes.update, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeMeter(
          await renameMeter(
            orm.em.fork(),
            { accountId, livemode },
            c.req.valid('param').id,
            c.req.valid('json').display_name,
          ),
        ),
        200,
      );
    })
    .openapi(routes.deactivate, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeMeter(
          await setMeterStatus(orm.em.fork(), { accountId, livemode }, c.req.valid('param').id, 'inactive'),
        ),
        200,
      );
    })
    .openapi(routes.reactivate, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeMeter(await setMeterStatus(orm.em.fork(), { accountId, livemode }, c.req.valid('param').id, 'active')),
        200,
      );
    })
    .openapi(routes.summaries, async (c) => {
      const scope = await accountScope(c, orm);
      const { accountId, livemode } = scope;
      const em = orm.em.fork();
      const meter = await findOwnMeter(em, { accountId, livemode }, c.req.valid('param').id);
      const query = c.req.valid('query');
      const groupBy = query.group_by ? query.group_by.split(',').map((p) => p.trim()) : [];
      for (const property of groupBy)
        if (!meter.groupBy.includes(property))
          throw new ApiError(
            'invalid_request',
            `group_by: "${property}" is not one of the meter's group_by properties (${meter.groupBy.join(', ') || 'none'}).`,
          );
      if (new Set(groupBy).size !== groupBy.length)
        throw new ApiError('invalid_request', 'group_by: each property once.');
      // The customer's id, else the customer whose external_id it is (an id wins, as POST /v1/meter_events resolves it).
      const customer =
        (await em.findOne(Customer, { id: query.customer, accountId, livemode }, { fields: ['id'] })) ??
        (await em.findOne(Customer, { externalId: query.customer, accountId, livemode }, { fields: ['id'] }));
      if (!customer) throw await notFoundInMode(em, Customer, query.customer, { accountId, livemode }, 'customer');
      const start = new Date(query.start_time * 1000);
      const end = new Date(query.end_time * 1000);
      if (
        query.value_grouping_window &&
        summaryWindows(start, end, query.value_grouping_window).length > maxSummaryWindows
      )
        throw new ApiError(
          'invalid_request',
          `value_grouping_window: at most ${maxSummaryWindows} windows in one request; ask for a shorter range.`,
        );
      const windows = await usageStoreFor(orm).summaries({
        accountId,
        livemode,
        customerId: customer.id,
        meter: meterRef(meter),
        start,
        end,
        groupBy,
        window: query.value_grouping_window,
      });
      const data = windows.flatMap((w) =>
        w.aggregates.map((aggregate) =>
          serializeSummary(meter.id, customer.id, livemode, w, aggregate, groupBy.length > 0),
        ),
      );
      return c.json({ object: 'list' as const, data, has_more: false }, 200);
    });
}
