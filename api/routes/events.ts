import { createRoute, z } from '@hono/zod-openapi';
import { raw } from '@mikro-orm/postgresql';

import { Event } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { eventTypes } from '../../domain/events.ts';
import { catalogTable, EventSchema, serializeEvent } from '../../objects/event.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

const typeFilter = z
  .string()
  .max(100)
  .refine(
    (value) =>
      value.endsWith('.*')
        ? eventTypes.some((t) => t.startsWith(value.slice(0, -1)))
        : (eventTypes as readonly string[]).includes(value),
    {
      message: 'must be an event type of the catalog, or a family such as subscription.*',
    },
  )
  .openapi({ description: 'An event type (`invoice.paid`) or a family (`invoice.*`)', example: 'subscription.*' });

/**
 * The ids an event's object carries: its own and the customer, subscription and invoice it names. The same
 * expression as the GIN index events_related_ids_gin (Migration20261127036000_events_related_object), so the index answers it.
 */
const relatedIdsSql =
  "array[data->'object'->>'id', data->'object'->>'customer_id', data->'object'->>'customer', data->'object'->>'subscription_id', data->'object'->>'subscription', data->'object'->>'invoice']";

const relatedObject = z.string().min(1).max(255).openapi({
  description:
    "An object's id: the events about it and about the objects that name it (a subscription's invoices and payments; a customer's subscriptions, invoices and payments; an invoice's payments and credit notes). A subscription's or customer's timeline.",
  example: 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e',
});

const ListQuery = z
  .object({ ...cursorQuery('event'), type: typeFilter.optional(), related_object: relatedObject.optional() })
  .strict()
  .refine(...oneCursor);

const listEvents = listRoute({
  tags: ['Events'],
  summary: 'List events, newest first',
  description:
    'Every state change of a transaction, payment, payment request, subscription, invoice, customer, account and payout, ' +
    `recorded in the same database transaction as the change. Cursor pages on the time-sortable ids.\n\nThe catalog:\n\n${catalogTable}`,
  query: ListQuery,
  item: EventSchema,
});

const getEvent = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Events'],
  summary: 'Retrieve an event',
  request: { params: idParam('evt') },
  responses: { 200: { description: 'The event', ...json(EventSchema) }, ...errorResponses(401, 404) },
});

export function eventsApp({ context: { orm } }: AppDeps) {
  return newOpenApiApp()
    .openapi(listEvents, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.type) where.type = query.type.endsWith('.*') ? { $like: `${query.type.slice(0, -1)}%` } : query.type;
      if (query.related_object)
        Object.assign(where, { [raw(`${relatedIdsSql} @> array[?]::text[]`, [query.related_object])]: [] });
      const { page, hasMore } = await keysetPage(orm.em.fork(), Event, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializeEvent), has_more: hasMore }, 200);
    })
    .openapi(getEvent, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const event = await orm.em.fork().findOne(Event, { id: c.req.valid('param').id, accountId, livemode });
      if (!event) throw new ApiError('not_found', 'No such event.');
      return c.json(serializeEvent(event), 200);
    });
}
