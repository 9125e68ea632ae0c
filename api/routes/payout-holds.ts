import { createRoute, z } from '@hono/zod-openapi';

import { PayoutHold } from '../../db/entities/index.ts';
import { PayoutHoldSchema, serializePayoutHold } from '../../objects/payout-hold.ts';
import { placeHold, releaseHold } from '../../services/payouts/holds.ts';
import { accountScope, actorOf, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { resourceId } from '../middleware/idempotency.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam, isoInstant } from '../schemas.ts';

const tags = ['Payouts'];
const CreateBody = z
  .object({
    reason: z.string().trim().min(1).max(500),
    until: isoInstant.optional().openapi({ description: 'ISO 8601; omitted: until released' }),
    payout: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'Hold one pending payout (po_…); omitted: the whole account in this mode' }),
  })
  .strict()
  .openapi({ example: { reason: 'Reviewing a disputed charge', until: '2027-01-15T00:00:00Z' } });
const ListQuery = z
  .object({ ...cursorQuery('payoutHold'), active: queryBoolean.optional() })
  .strict()
  .refine(...oneCursor);

const create = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Hold payouts',
  description:
    "On the whole account in this mode, or on one pending payout (`invalid_state` once it was sent). A held payout stays pending and shows `hold`; a held account's schedule skips its runs and says why. " +
    "Owners, admins and API keys; the platform admin holds any account with `x-account-id`, and only an admin releases an admin's hold.",
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Placed', ...json(PayoutHoldSchema) }, ...errorResponses(400, 401, 403, 404, 409) },
});
const list = listRoute({ tags, summary: 'List payout holds, newest first', query: ListQuery, item: PayoutHoldSchema });
const release = createRoute({
  method: 'delete',
  path: '/{id}',
  tags,
  summary: 'Release a payout hold',
  description:
    'The payouts it kept pending are sent at once (payout.updated); the schedule pays out again at its next run. `invalid_state` when already released.',
  request: { params: idParam('ph') },
  responses: { 200: { description: 'Released', ...json(PayoutHoldSchema) }, ...errorResponses(401, 403, 404, 409) },
});

export function payoutHoldsApp({ context }: AppDeps) {
  const { orm, temporal } = context;
  return newOpenApiApp()
    .openapi(create, async (c) => {
      const principal = requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const id = resourceId(c, 'payoutHold');
      // A retry that takes over the key after a crash finds the hold the first request placed.
      const existing = c.get('idempotency')?.takeover
        ? await orm.em.fork().findOne(PayoutHold, { id, accountId: scope.accountId, livemode: scope.livemode })
        : null;
      if (existing) return c.json(serializePayoutHold(existing), 201);
      const hold = await placeHold(
        orm.em.fork(),
        { accountId: scope.accountId, livemode: scope.livemode },
        { id, reason: body.reason, until: body.until, payoutId: body.payout, createdBy: actorOf(principal) },
      );
      return c.json(serializePayoutHold(hold), 201);
    })
    .openapi(list, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.active === true)
        Object.assign(where, { releasedAt: null, $or: [{ until: null }, { until: { $gt: new Date() } }] });
      if (query.active === false)
        Object.assign(where, { $or: [{ releasedAt: { $ne: null } }, { until: { $lte: new Date() } }] });
      const { page, hasMore } = await keysetPage(orm.em.fork(), PayoutHold, where, query);
      return c.json({ object: 'list' as const, data: page.map((h) => serializePayoutHold(h)), has_more: hasMore }, 200);
    })
    .openapi(release, async (c) => {
      const principal = requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const scope = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      const hold = await releaseHold(
        orm.em.fork(),
        temporal.client,
        { accountId: scope.accountId, livemode: scope.livemode },
        id,
        actorOf(principal),
      );
      if (!hold) throw await notFoundInMode(orm.em, PayoutHold, id, scope, 'payout hold');
      return c.json(serializePayoutHold(hold), 200);
    });
}
