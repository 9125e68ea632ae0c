import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Plan } from '../../db/entities/index.ts';
import { intervalUnits } from '../../domain/billing-calendar.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listSchema, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';
import { findOwnProduct } from '../../services/catalog.ts';
import { amount, currency } from '../../objects/common.ts';
import { PlanSchema, serializePlan } from '../../objects/plan.ts';

const CreatePlanBody = z
  .object({
    name: z.string().min(1).max(200),
    product: z.string().min(1).max(64).optional().openapi({ description: 'A product id of the same account and mode (404 not_found otherwise)' }),
    amount,
    currency,
    interval: z.enum(intervalUnits),
    interval_count: z.number().int().min(1).max(365).default(1),
    trial_period_days: z.number().int().min(0).max(730).default(0),
  })
  .strict()
  .openapi({ example: { name: 'Pro monthly', product: 'prod_01jd3x5k8q0m2v7c9r4t6y1w3e', amount: 2000, currency: 'USD', interval: 'month' } });

const UpdatePlanBody = z
  .object({
    name: z.string().min(1).max(200).optional(),
    active: z.boolean().optional().openapi({ description: 'false archives the plan, true takes it out of the archive' }),
  })
  .strict()
  .openapi({ example: { name: 'Pro monthly (2026 price)' } });

const ListQuery = z
  .object({
    ...cursorQuery('plan'),
    active: queryBoolean.optional().openapi({ type: 'string', enum: ['true', 'false'] }),
    product: z.string().min(1).max(64).optional().openapi({ description: 'Only the plans of this product' }),
  })
  .strict()
  .refine(...oneCursor);

const forms = 'Takes JSON or an `application/x-www-form-urlencoded` body (`amount=2000&interval=month`).';
const archiving =
  'A plan is never deleted: subscriptions and invoices name it. An archived plan (active false) stays readable and its ' +
  'subscriptions keep billing on it, but a new subscription on it is refused with plan_archived (409).';

const createPlan = createRoute({
  method: 'post',
  path: '/',
  tags: ['Plans'],
  summary: 'Create a plan',
  description: forms,
  request: { body: { ...json(CreatePlanBody), required: true } },
  responses: { 201: { description: 'Created', ...json(PlanSchema) }, ...errorResponses(400, 401, 404) },
});

const listPlans = createRoute({
  method: 'get',
  path: '/',
  tags: ['Plans'],
  summary: 'List plans, newest first',
  request: { query: ListQuery },
  responses: { 200: { description: 'A page', ...json(listSchema(PlanSchema)) }, ...errorResponses(400, 401) },
});

const getPlan = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Plans'],
  summary: 'Retrieve a plan',
  request: { params: idParam('plan') },
  responses: { 200: { description: 'The plan', ...json(PlanSchema) }, ...errorResponses(401, 404) },
});

const updateRoute = (method: 'post' | 'patch') =>
  createRoute({
    method,
    path: '/{id}',
    tags: ['Plans'],
    summary: method === 'patch' ? 'Rename, archive or restore a plan' : 'Rename, archive or restore a plan (POST, as Stripe does)',
    description: `Only name and active change: amount, currency and interval are fixed once subscriptions bill on them (make a new plan). ${archiving} ${forms}`,
    request: { params: idParam('plan'), body: { ...json(UpdatePlanBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(PlanSchema) }, ...errorResponses(400, 401, 404) },
  });

const archivePlan = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['Plans'],
  summary: 'Archive a plan',
  description: `Sets active to false and answers the plan; archiving an archived plan changes nothing. ${archiving}`,
  request: { params: idParam('plan') },
  responses: { 200: { description: 'Archived', ...json(PlanSchema) }, ...errorResponses(401, 404) },
});

async function findOwnPlan(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
  const plan = await em.findOne(Plan, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!plan) throw new ApiError('not_found', 'No such plan.');
  return plan;
}

export function plansApp({ orm }: ApiDeps) {
  const update = async (id: string, body: z.infer<typeof UpdatePlanBody>, scope: { accountId: string; livemode: boolean }) => {
    const em = orm.em.fork();
    const plan = await findOwnPlan(em, id, scope);
    if (body.name !== undefined) plan.name = body.name;
    if (body.active !== undefined) plan.active = body.active;
    await em.flush();
    return serializePlan(plan);
  };

  return newOpenApiApp()
    .openapi(createPlan, async (c) => {
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      if (body.product !== undefined) await findOwnProduct(em, body.product, scope);
      const plan = em.create(Plan, {
        id: newId('plan'),
        accountId: scope.accountId,
        productId: body.product ?? null,
        name: body.name,
        amount: body.amount,
        currency: body.currency,
        interval: body.interval,
        intervalCount: body.interval_count,
        trialPeriodDays: body.trial_period_days,
        active: true,
        livemode: scope.livemode,
      });
      await em.flush();
      return c.json(serializePlan(plan), 201);
    })
    .openapi(listPlans, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.active !== undefined) where.active = query.active;
      if (query.product !== undefined) where.productId = query.product;
      const { page, hasMore } = await keysetPage(orm.em.fork(), Plan, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializePlan), has_more: hasMore }, 200);
    })
    .openapi(getPlan, async (c) => {
      const scope = await accountScope(c, orm);
      return c.json(serializePlan(await findOwnPlan(orm.em.fork(), c.req.valid('param').id, scope)), 200);
    })
    .openapi(updateRoute('patch'), async (c) => c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200))
    .openapi(updateRoute('post'), async (c) => c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200))
    .openapi(archivePlan, async (c) => c.json(await update(c.req.valid('param').id, { active: false }, await accountScope(c, orm)), 200));
}
