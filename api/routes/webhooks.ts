/**
 * Webhook endpoints (POST/GET/PATCH/DELETE /v1/webhooks, rotate_secret), their
 * deliveries (GET /v1/webhooks/{id}/deliveries), redelivery of an event
 * (POST /v1/events/{id}/redeliver), and the middleware that wakes the
 * dispatcher after a change. Delivery itself: services/webhooks/dispatch.ts,
 * services/webhooks/delivery.ts and workflows/webhooks.ts.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ulid } from 'ulidx';

import { Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { eventTypes } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import { createSecretBox } from '../../domain/secret-box.ts';
import { type Resolver, UrlNotAllowedError } from '../../domain/webhook-url.ts';
import { deliveryIdPattern, endpointWants, newWebhookSecret, secretRotationOverlapMs } from '../../domain/webhooks.ts';
import {
  DeliverySchema,
  serializeDelivery,
  serializeWebhookEndpoint,
  WebhookEndpointSchema,
  WithSecretSchema,
} from '../../objects/webhook-endpoint.ts';
import { startDelivery } from '../../services/webhooks/dispatch.ts';
import { pendingDelivery } from '../../services/webhooks/pending-delivery.ts';
import { checkWebhookUrl } from '../../services/webhooks/url-check.ts';
import type { DispatchWaker } from '../../services/webhooks/wake.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, listSchema, oneCursor } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

const known = new Set<string>(eventTypes);
const eventsField = z
  .array(z.string().min(1).max(100))
  .min(1)
  .max(100)
  .superRefine((names, ctx) => {
    const unknown = names.filter((n) => n !== '*' && !known.has(n));
    if (unknown.length)
      ctx.addIssue({
        code: 'custom',
        message: `unknown event types: ${unknown.join(', ')} (GET /openapi.json and docs/events-and-webhooks.md list them)`,
      });
    if (names.includes('*') && names.length > 1)
      ctx.addIssue({ code: 'custom', message: 'use ["*"] alone for every event' });
  })
  .transform((names) => [...new Set(names)])
  .openapi({
    description: 'Event types to receive, or ["*"] for all',
    example: ['transaction.succeeded', 'payment.failed'],
  });

const urlField = z.string().min(1).max(2048).openapi({ example: 'https://example.com/webhooks/billing' });

const CreateBody = z
  .object({
    url: urlField,
    events: eventsField,
    description: z.string().max(500).optional(),
    enabled: z.boolean().default(true),
  })
  .strict()
  .openapi({ example: { url: 'https://example.com/webhooks/billing', events: ['invoice.paid', 'payment.failed'] } });

const UpdateBody = z
  .object({
    url: urlField.optional(),
    events: eventsField.optional(),
    description: z.string().max(500).nullable().optional().openapi({ description: 'null or "" removes it' }),
    enabled: z
      .boolean()
      .optional()
      .openapi({ description: 'true also clears disabled_reason and the run of failures' }),
  })
  .strict()
  .openapi({ example: { events: ['invoice.paid', 'invoice.payment_failed', 'payment.failed'], enabled: true } });

const RedeliverBody = z
  .object({
    endpoint_id: z
      .string()
      .regex(/^we_[0-9a-z]{26}$/, 'must be a we_ id')
      .optional(),
  })
  .strict()
  .openapi({ example: { endpoint_id: 'we_01jd3x5k8q0m2v7c9r4t6y1w3e' } });

const deliveryCursor = z.string().regex(deliveryIdPattern, 'must be a whd_ delivery id');
const DeliveriesQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20).openapi({ description: '1 to 100' }),
    starting_after: deliveryCursor.optional(),
    ending_before: deliveryCursor.optional(),
    status: z.enum(['pending', 'succeeded', 'failed', 'canceled']).optional(),
  })
  .strict()
  .refine(...oneCursor);

const ListQuery = z
  .object(cursorQuery('webhookEndpoint'))
  .strict()
  .refine(...oneCursor);

const json = <T extends z.ZodType>(schema: T) => ({ content: { 'application/json': { schema } } });
const tags = ['Webhooks'];
const who = 'The account owner, an admin (x-account-id) or an API key; members get 403.';

async function withAttempts(em: EntityManager, deliveries: WebhookDelivery[]) {
  const attempts = deliveries.length
    ? await em.find(
        WebhookAttempt,
        { deliveryId: { $in: deliveries.map((d) => d.id) } },
        { orderBy: { attempt: 'asc', attemptedAt: 'asc' } },
      )
    : [];
  return deliveries.map((d) =>
    serializeDelivery(
      d,
      attempts.filter((a) => a.deliveryId === d.id),
    ),
  );
}

const createRoute_ = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Register a webhook endpoint',
  description: `Returns the endpoint with its signing secret, shown only here. Live-mode urls must be https and may not resolve to a private, loopback, link-local or otherwise special address (url_not_allowed). Sandbox urls follow the deployment's rule (development and test: loopback and private networks allowed; production: live's address rules unless WEBHOOK_ALLOWED_PRIVATE_HOSTS lists them), the same rule every delivery is checked with. The endpoint gets the events recorded after its creation (test clock events too, in the real order, whatever their clock time). ${who}`,
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Created', ...json(WithSecretSchema) }, ...errorResponses(400, 401, 403) },
});
const listEndpoints = listRoute({
  tags,
  summary: 'List webhook endpoints, newest first',
  query: ListQuery,
  item: WebhookEndpointSchema,
  errors: [400, 401, 403],
});
const getRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags,
  summary: 'Retrieve a webhook endpoint (never its secret)',
  request: { params: idParam('we') },
  responses: { 200: { description: 'The endpoint', ...json(WebhookEndpointSchema) }, ...errorResponses(401, 403, 404) },
});
const updateRoute = createRoute({
  method: 'patch',
  path: '/{id}',
  tags,
  summary: 'Update a webhook endpoint',
  description:
    'url, events, description, enabled; fields left out stay as they are. A new url is checked like a new endpoint.',
  request: { params: idParam('we'), body: { ...json(UpdateBody), required: true } },
  responses: { 200: { description: 'Updated', ...json(WebhookEndpointSchema) }, ...errorResponses(400, 401, 403, 404) },
});
const deleteRoute = createRoute({
  method: 'delete',
  path: '/{id}',
  tags,
  summary: 'Delete a webhook endpoint',
  description: 'Deliveries still retrying stop at their next attempt (status canceled).',
  request: { params: idParam('we') },
  responses: {
    200: {
      description: 'Deleted',
      ...json(z.object({ id: z.string(), object: z.literal('webhook_endpoint'), deleted: z.literal(true) })),
    },
    ...errorResponses(401, 403, 404),
  },
});
const rotateRoute = createRoute({
  method: 'post',
  path: '/{id}/rotate_secret',
  tags,
  summary: 'Rotate the signing secret',
  description:
    'Returns the new secret, shown only here. For 24 hours every webhook carries two signatures, by the new and the old secret, so receivers can switch without losing any.',
  request: { params: idParam('we') },
  responses: { 200: { description: 'Rotated', ...json(WithSecretSchema) }, ...errorResponses(401, 403, 404) },
});
const deliveriesRoute = createRoute({
  method: 'get',
  path: '/{id}/deliveries',
  tags,
  summary: "An endpoint's deliveries with every attempt, newest event first",
  request: { params: idParam('we'), query: DeliveriesQuery },
  responses: {
    200: { description: 'A page', ...json(listSchema(DeliverySchema)) },
    ...errorResponses(400, 401, 403, 404),
  },
});
const redeliverRoute = createRoute({
  method: 'post',
  path: '/{id}/redeliver',
  tags,
  summary: 'Deliver an event again',
  description:
    'Starts a new delivery (with its own retries) of the event to `endpoint_id`, or to every enabled endpoint that subscribes to its type. The webhook carries the same event id (webhook-id). invalid_state (409) when the endpoint is disabled or no endpoint subscribes.',
  request: { params: idParam('evt'), body: { ...json(RedeliverBody), required: false } },
  responses: {
    202: { description: 'Deliveries started', ...json(listSchema(DeliverySchema)) },
    ...errorResponses(400, 401, 403, 404, 409),
  },
});

async function findOwnEndpoint(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
  const endpoint = await em.findOne(WebhookEndpoint, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!endpoint) throw new ApiError('not_found', `No such webhook endpoint: ${id}.`);
  return endpoint;
}

export function webhooksApps({ config, context }: AppDeps, wake: DispatchWaker, resolver?: Resolver) {
  const { orm, temporal } = context;
  const box = createSecretBox(config.auth.secret);
  /** The url as checked and normalized (what is stored), or url_not_allowed. */
  const checkUrl = async (url: string, livemode: boolean): Promise<string> => {
    try {
      return (await checkWebhookUrl(url, livemode, resolver, config.webhookUrlPolicy)).url.href;
    } catch (error) {
      if (error instanceof UrlNotAllowedError) throw new ApiError('url_not_allowed', `url: ${error.message}.`);
      throw error;
    }
  };
  const scope = async (c: Parameters<typeof accountScope>[0]) => {
    requireActor(c, ['admin', 'owner', 'api_key']);
    return accountScope(c, orm);
  };

  const webhooks = newOpenApiApp()
    .openapi(createRoute_, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await scope(c);
      const url = await checkUrl(body.url, livemode);
      const secret = newWebhookSecret();
      const now = new Date();
      const em = orm.em.fork();
      const endpoint = em.create(WebhookEndpoint, {
        id: newId('webhookEndpoint'),
        accountId,
        livemode,
        url,
        description: body.description || null,
        events: body.events,
        enabled: body.enabled,
        disabledReason: body.enabled ? null : 'manual',
        disabledAt: body.enabled ? null : now,
        secret: box.seal(secret),
        previousSecret: null,
        previousSecretExpiresAt: null,
        failingSince: null,
        createdAt: now,
        updatedAt: now,
      });
      await em.flush();
      wake.forget(accountId);
      // The dispatcher runs from the first endpoint on.
      await wake.wake();
      return c.json({ ...serializeWebhookEndpoint(endpoint), secret }, 201);
    })
    .openapi(listEndpoints, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await scope(c);
      const { page, hasMore } = await keysetPage(orm.em.fork(), WebhookEndpoint, { accountId, livemode }, query);
      return c.json({ object: 'list' as const, data: page.map(serializeWebhookEndpoint), has_more: hasMore }, 200);
    })
    .openapi(getRoute, async (c) => {
      const s = await scope(c);
      return c.json(serializeWebhookEndpoint(await findOwnEndpoint(orm.em.fork(), c.req.valid('param').id, s)), 200);
    })
    .openapi(updateRoute, async (c) => {
      const body = c.req.valid('json');
      const s = await scope(c);
      const em = orm.em.fork();
      const endpoint = await findOwnEndpoint(em, c.req.valid('param').id, s);
      if (body.url !== undefined) {
        endpoint.url = await checkUrl(body.url, s.livemode);
      }
      if (body.events !== undefined) endpoint.events = body.events;
      if (body.description !== undefined) endpoint.description = body.description || null;
      const now = new Date();
      if (body.enabled === true && !endpoint.enabled) {
        endpoint.enabled = true;
        endpoint.disabledReason = null;
        endpoint.disabledAt = null;
        endpoint.failingSince = null;
      } else if (body.enabled === false && endpoint.enabled) {
        endpoint.enabled = false;
        endpoint.disabledReason = 'manual';
        endpoint.disabledAt = now;
      }
      endpoint.updatedAt = now;
      await em.flush();
      wake.forget(s.accountId);
      return c.json(serializeWebhookEndpoint(endpoint), 200);
    })
    .openapi(deleteRoute, async (c) => {
      const s = await scope(c);
      const em = orm.em.fork();
      const endpoint = await findOwnEndpoint(em, c.req.valid('param').id, s);
      await em.remove(endpoint).flush();
      wake.forget(s.accountId);
      return c.json({ id: endpoint.id, object: 'webhook_endpoint' as const, deleted: true as const }, 200);
    })
    .openapi(rotateRoute, async (c) => {
      const s = await scope(c);
      const em = orm.em.fork();
      const endpoint = await findOwnEndpoint(em, c.req.valid('param').id, s);
      const secret = newWebhookSecret();
      const now = new Date();
      endpoint.previousSecret = endpoint.secret;
      endpoint.previousSecretExpiresAt = new Date(now.getTime() + secretRotationOverlapMs);
      endpoint.secret = box.seal(secret);
      endpoint.updatedAt = now;
      await em.flush();
      return c.json({ ...serializeWebhookEndpoint(endpoint), secret }, 200);
    })
    .openapi(deliveriesRoute, async (c) => {
      const query = c.req.valid('query');
      const s = await scope(c);
      const em = orm.em.fork();
      const endpoint = await findOwnEndpoint(em, c.req.valid('param').id, s);
      const where: Record<string, unknown> = { endpointId: endpoint.id, accountId: s.accountId, livemode: s.livemode };
      if (query.status) where.status = query.status;
      const { page, hasMore } = await keysetPage(em, WebhookDelivery, where, query);
      return c.json({ object: 'list' as const, data: await withAttempts(em, page), has_more: hasMore }, 200);
    });

  const events = newOpenApiApp().openapi(redeliverRoute, async (c) => {
    const body = await optionalJsonBody(c, RedeliverBody);
    const s = await scope(c);
    const em = orm.em.fork();
    const event = await em.findOne(Event, {
      id: c.req.valid('param').id,
      accountId: s.accountId,
      livemode: s.livemode,
    });
    if (!event) throw new ApiError('not_found', `No such event: ${c.req.valid('param').id}.`);
    let endpoints: WebhookEndpoint[];
    if (body.endpoint_id) {
      const endpoint = await findOwnEndpoint(em, body.endpoint_id, s);
      if (!endpoint.enabled)
        throw new ApiError(
          'invalid_state',
          `Webhook endpoint ${endpoint.id} is disabled; enable it first (PATCH enabled=true).`,
        );
      endpoints = [endpoint];
    } else {
      endpoints = (
        await em.find(
          WebhookEndpoint,
          { accountId: s.accountId, livemode: s.livemode, enabled: true },
          { orderBy: { id: 'asc' } },
        )
      ).filter((e) => endpointWants(e.events, event.type));
      if (endpoints.length === 0)
        throw new ApiError('invalid_state', `No enabled webhook endpoint subscribes to ${event.type}.`);
    }
    const now = new Date();
    const deliveries = endpoints.map((endpoint) =>
      em.create(WebhookDelivery, pendingDelivery(event, endpoint.id, now, ulid().toLowerCase())),
    );
    await em.flush();
    for (const delivery of deliveries) await startDelivery(temporal, delivery);
    return c.json({ object: 'list' as const, data: await withAttempts(em, deliveries), has_more: false }, 202);
  });

  return { webhooks, events };
}
