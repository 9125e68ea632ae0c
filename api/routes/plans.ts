import { createRoute, z } from '@hono/zod-openapi';
import { Plan } from '../../db/entities/index.ts';
import { intervalUnits } from '../../domain/billing-calendar.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import { amount, currency, errorResponses, idParam, PlanSchema } from '../schemas.ts';
import { serializePlan } from '../serializers.ts';

const CreatePlanBody = z
  .object({
    name: z.string().min(1).max(200),
    amount,
    currency,
    interval: z.enum(intervalUnits),
    interval_count: z.number().int().min(1).max(365).default(1),
    trial_period_days: z.number().int().min(0).max(730).default(0),
  })
  .strict();

const createPlan = createRoute({
  method: 'post',
  path: '/',
  tags: ['Plans'],
  summary: 'Create a plan',
  request: { body: { content: { 'application/json': { schema: CreatePlanBody } }, required: true } },
  responses: { 201: { description: 'Created', content: { 'application/json': { schema: PlanSchema } } }, ...errorResponses(400) },
});

const getPlan = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Plans'],
  summary: 'Retrieve a plan',
  request: { params: idParam('plan') },
  responses: { 200: { description: 'The plan', content: { 'application/json': { schema: PlanSchema } } }, ...errorResponses(404) },
});

export function plansApp({ orm }: ApiDeps) {
  return newOpenApiApp()
    .openapi(createPlan, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const plan = em.create(Plan, {
        id: newId('plan'),
        accountId,
        name: body.name,
        amount: body.amount,
        currency: body.currency,
        interval: body.interval,
        intervalCount: body.interval_count,
        trialPeriodDays: body.trial_period_days,
        active: true,
        livemode,
      });
      await em.flush();
      return c.json(serializePlan(plan), 201);
    })
    .openapi(getPlan, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const plan = await orm.em.fork().findOne(Plan, { id: c.req.valid('param').id, accountId, livemode });
      if (!plan) throw new ApiError('not_found', 'No such plan.');
      return c.json(serializePlan(plan), 200);
    });
}
