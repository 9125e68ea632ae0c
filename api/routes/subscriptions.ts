import { createRoute, z } from '@hono/zod-openapi';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { Customer, Plan, Subscription } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import type { SubscriptionSnapshot } from '../../domain/subscription.ts';
import { AccountIdKey, CustomerIdKey, LivemodeKey, PlanIdKey, SubscriptionStatusKey } from '../../workflows/search-attributes.ts';
import { subscriptionCreatedUpdate, subscriptionWorkflow, type SubscriptionWorkflowInput } from '../../workflows/subscription.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import { errorResponses, idParam, SubscriptionSchema } from '../schemas.ts';
import { serializeSubscription } from '../serializers.ts';

const CreateSubscriptionBody = z
  .object({
    customer_id: z.string().min(1).max(64),
    plan: z.string().min(1).max(64).openapi({ description: 'Plan id' }),
    trial_period_days: z.number().int().min(0).max(730).optional().openapi({ description: "Defaults to the plan's trial_period_days" }),
  })
  .strict();

const createSubscription = createRoute({
  method: 'post',
  path: '/',
  tags: ['Subscriptions'],
  summary: 'Create a subscription',
  description:
    'Starts the subscription\'s workflow and answers once it has recorded its first state: `trialing` with a trial, ' +
    'otherwise the outcome of the first charge (`active` or `past_due`).',
  request: { body: { content: { 'application/json': { schema: CreateSubscriptionBody } }, required: true } },
  responses: { 201: { description: 'Created', content: { 'application/json': { schema: SubscriptionSchema } } }, ...errorResponses(400, 404, 409) },
});

const getSubscription = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Subscriptions'],
  summary: 'Retrieve a subscription',
  request: { params: idParam('sub') },
  responses: { 200: { description: 'The subscription', content: { 'application/json': { schema: SubscriptionSchema } } }, ...errorResponses(404) },
});

export function subscriptionsApp({ orm, temporal, config }: ApiDeps) {
  return newOpenApiApp()
    .openapi(createSubscription, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const [customer, plan] = await Promise.all([
        em.findOne(Customer, { id: body.customer_id, accountId, livemode }),
        em.findOne(Plan, { id: body.plan, accountId, livemode }),
      ]);
      if (!customer) throw new ApiError('not_found', `No such customer: ${body.customer_id}.`);
      if (!plan) throw new ApiError('not_found', `No such plan: ${body.plan}.`);
      // Archived plans keep billing their subscriptions but take no new ones.
      if (!plan.active) throw new ApiError('plan_archived', `Plan ${plan.id} is archived: it takes no new subscriptions.`);

      const id = newId('subscription');
      const input: SubscriptionWorkflowInput = {
        snapshot: initialSnapshot(id, accountId, customer.id, plan.id, livemode),
        plan: { planId: plan.id, amount: plan.amount, currency: plan.currency, interval: { unit: plan.interval, count: plan.intervalCount } },
        trialPeriodDays: body.trial_period_days ?? plan.trialPeriodDays,
      };
      // Update-with-start: one round trip starts the workflow and waits for its
      // first recorded state, so the 201 carries what a GET will read next.
      const snapshot = await temporal.workflow.executeUpdateWithStart(subscriptionCreatedUpdate, {
        startWorkflowOperation: new WithStartWorkflowOperation(subscriptionWorkflow, {
          workflowId: id,
          taskQueue: config.taskQueue,
          args: [input],
          workflowIdConflictPolicy: 'FAIL',
          staticSummary: `Subscription of ${customer.id} to ${plan.id}`,
          typedSearchAttributes: [
            { key: SubscriptionStatusKey, value: 'trialing' },
            { key: AccountIdKey, value: accountId },
            { key: CustomerIdKey, value: customer.id },
            { key: PlanIdKey, value: plan.id },
            { key: LivemodeKey, value: livemode },
          ],
        }),
      });
      return c.json(serializeSubscription(snapshot), 201);
    })
    .openapi(getSubscription, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const subscription = await orm.em.fork().findOne(Subscription, { id: c.req.valid('param').id, accountId, livemode });
      if (!subscription) throw new ApiError('not_found', 'No such subscription.');
      return c.json(serializeSubscription(subscription), 200);
    });
}

function initialSnapshot(id: string, accountId: string, customerId: string, planId: string, livemode: boolean): SubscriptionSnapshot {
  // Times are set by the workflow from workflow time; these are placeholders it overwrites.
  const epoch = new Date(0).toISOString();
  return {
    id,
    accountId,
    customerId,
    planId,
    status: 'trialing',
    livemode,
    createdAt: epoch,
    updatedAt: epoch,
    trialStart: null,
    trialEnd: null,
    billingAnchor: null,
    billingCycle: 0,
    currentPeriodStart: null,
    currentPeriodEnd: null,
    latestInvoiceId: null,
    canceledAt: null,
    version: 0,
  };
}
