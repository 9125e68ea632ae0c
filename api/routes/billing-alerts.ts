/**
 * Usage alerts (docs/usage.md#usage-alerts; Stripe's billing alerts): create, list, read, activate,
 * deactivate, archive. Detection runs after meter event batches (services/usage/alerts.ts).
 */
import { createRoute, z } from '@hono/zod-openapi';

import { BillingAlertSchema, serializeBillingAlert } from '../../objects/billing-alert.ts';
import { createAlert, findAlert, listAlerts, setAlertStatus } from '../../services/usage/alerts.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

const CreateAlertBody = z
  .object({
    title: z.string().min(1).max(256),
    alert_type: z.literal('usage_threshold'),
    usage_threshold: z
      .object({
        gte: z.coerce.number().int().min(1).max(1e15).openapi({
          description: "Fires when a customer's usage on the meter in the month reaches this (an integer ≥ 1)",
        }),
        meter: z.string().min(1).max(64).openapi({ description: 'The meter watched (mtr_…)' }),
        recurrence: z.literal('one_time').openapi({ description: 'one_time: at most once per customer' }),
      })
      .strict(),
    filter: z
      .object({ customer: z.string().min(1).max(64) })
      .strict()
      .optional()
      .openapi({ description: 'Only this customer; default every customer' }),
  })
  .strict()
  .openapi({
    example: {
      title: 'API tokens: 1M reached',
      alert_type: 'usage_threshold',
      usage_threshold: { gte: 1000000, meter: 'mtr_01jd5a2b3c4d5e6f7g8h9j0k1m', recurrence: 'one_time' },
      filter: { customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' },
    },
  });

const ListQuery = z
  .object({
    meter: z.string().min(1).max(64).optional().openapi({ description: 'Only the alerts of this meter' }),
    ...cursorQuery('billingAlert'),
  })
  .strict()
  .refine(...oneCursor);

const tags = ['Billing alerts'];
const statusRoute = (action: 'activate' | 'deactivate' | 'archive', summary: string, description: string) =>
  createRoute({
    method: 'post',
    path: `/{id}/${action}`,
    tags,
    summary,
    description,
    request: { params: idParam('alrt') },
    responses: { 200: { description: 'The alert', ...json(BillingAlertSchema) }, ...errorResponses(401, 404, 409) },
  });
const routes = {
  create: createRoute({
    method: 'post',
    path: '/',
    tags,
    summary: 'Create a usage alert',
    description:
      "Records `billing.alert.triggered` once per customer (the filter's, or each) when the customer's usage on the meter in the current UTC calendar month (its test clock's month on a clock) reaches gte. " +
      'Checked after each meter event batch commits. 400 `invalid_request` for an unknown meter or customer.',
    request: { body: { ...json(CreateAlertBody), required: true } },
    responses: { 201: { description: 'Created', ...json(BillingAlertSchema) }, ...errorResponses(400, 401) },
  }),
  list: listRoute({
    tags,
    summary: 'List usage alerts (active and inactive), newest first',
    query: ListQuery,
    item: BillingAlertSchema,
  }),
  get: createRoute({
    method: 'get',
    path: '/{id}',
    tags,
    summary: 'Retrieve a usage alert',
    request: { params: idParam('alrt') },
    responses: { 200: { description: 'The alert', ...json(BillingAlertSchema) }, ...errorResponses(401, 404) },
  }),
  activate: statusRoute(
    'activate',
    'Activate a usage alert',
    'It fires again for customers it has not fired for. 409 `conflict` when archived.',
  ),
  deactivate: statusRoute(
    'deactivate',
    'Deactivate a usage alert',
    'It stops firing until activated. 409 `conflict` when archived.',
  ),
  archive: statusRoute(
    'archive',
    'Archive a usage alert',
    'For good: it never fires again and leaves the list (GET by id still reads it).',
  ),
};

export function billingAlertsApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp()
    .openapi(routes.create, async (c) => {
      const scope = await accountScope(c, orm);
      const body = c.req.valid('json');
      const alert = await createAlert(
        orm,
        { accountId: scope.accountId, livemode: scope.livemode },
        {
          title: body.title,
          gte: body.usage_threshold.gte,
          meterId: body.usage_threshold.meter,
          customerId: body.filter?.customer ?? null,
        },
      );
      return c.json(serializeBillingAlert(alert), 201);
    })
    .openapi(routes.list, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const q = c.req.valid('query');
      const { page, hasMore } = await listAlerts(
        orm,
        { accountId, livemode },
        { limit: q.limit, startingAfter: q.starting_after, endingBefore: q.ending_before, meterId: q.meter },
      );
      return c.json({ object: 'list' as const, data: page.map(serializeBillingAlert), has_more: hasMore }, 200);
    })
    .openapi(routes.get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(serializeBillingAlert(await findAlert(orm, { accountId, livemode }, c.req.valid('param').id)), 200);
    })
    .openapi(routes.activate, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeBillingAlert(await setAlertStatus(orm, { accountId, livemode }, c.req.valid('param').id, 'active')),
        200,
      );
    })
    .openapi(routes.deactivate, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeBillingAlert(await setAlertStatus(orm, { accountId, livemode }, c.req.valid('param').id, 'inactive')),
        200,
      );
    })
    .openapi(routes.archive, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeBillingAlert(await setAlertStatus(orm, { accountId, livemode }, c.req.valid('param').id, 'archived')),
        200,
      );
    });
}
