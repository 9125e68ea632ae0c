import { createRoute, z } from '@hono/zod-openapi';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';

import {
  Account,
  ApiKey,
  PaymentRequest,
  RecurringPaymentRequest,
  Session,
  Subscription,
  User,
} from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { AccountSchema, serializeAccount, serializeAccountRow, SettingsPatch } from '../../objects/account.ts';
import { timestamp } from '../../objects/common.ts';
import { recordAccountEvent } from '../../services/accounts/events.ts';
import { lockAccount } from '../../services/accounts/lock.ts';
import type { ServiceContext } from '../../services/context.ts';
import { cancelPaymentRequest, cancelRecurringPaymentRequest } from '../../services/payment-requests/commands.ts';
import { stopPayoutSchedules } from '../../services/payouts/schedule.ts';
import { accountClosedSignal } from '../../workflows/subscription.ts';
import { requireCurrentPassword } from '../auth/passwords.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import { emailField, errorResponses } from '../schemas.ts';

const PatchAccountBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    email: emailField.optional(),
    settings: SettingsPatch.optional(),
    current_password: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .openapi({ description: "Required when an owner changes the account's email: the owner's password" }),
  })
  .strict()
  .openapi({ example: { name: 'Acme Studio', settings: { timezone: 'Europe/Paris', language: 'fr' } } });

const getAccount = createRoute({
  method: 'get',
  path: '/',
  tags: ['Accounts'],
  summary: 'The account of the token',
  description: 'Admins name the account with x-account-id.',
  responses: {
    200: { description: 'The account', content: { 'application/json': { schema: AccountSchema } } },
    ...errorResponses(401, 403),
  },
});

const patchAccount = createRoute({
  method: 'patch',
  path: '/',
  tags: ['Accounts'],
  summary: 'Update the account (partial)',
  description:
    'Owner or admin. Omitted fields stay as they are; settings merge key by key. An owner changing the email sends their `current_password` ' +
    '(400 `invalid_request` without it, 401 `invalid_credentials` when wrong).',
  request: { body: { content: { 'application/json': { schema: PatchAccountBody } }, required: true } },
  responses: {
    200: { description: 'Updated', content: { 'application/json': { schema: AccountSchema } } },
    ...errorResponses(400, 401, 409),
  },
});

const closeAccount = createRoute({
  method: 'delete',
  path: '/',
  tags: ['Accounts'],
  summary: 'Close the account (irreversible)',
  description:
    'Refused with active_subscriptions while any subscription is trialing, active or past due. Closing revokes every session and API key, suspends every user, cancels paused subscriptions and open payment requests, and stops its payout schedules.',
  responses: {
    200: {
      description: 'Closed',
      content: {
        'application/json': {
          schema: z.object({ id: z.string(), status: z.literal('closed'), closed_at: timestamp, message: z.string() }),
        },
      },
    },
    ...errorResponses(401, 403, 409),
  },
});

export function accountApp(deps: AppDeps) {
  const { context } = deps;
  const { orm, temporal, logger } = context;
  return newOpenApiApp()
    .openapi(getAccount, async (c) => {
      const { accountId } = await accountScope(c, orm);
      // The caller's own account came with the credential check: no second query.
      const own = c.get('callerAccount');
      if (own?.id === accountId) return c.json(serializeAccountRow(own), 200);
      const account = await orm.em.fork().findOne(Account, { id: accountId });
      if (!account) throw new ApiError('not_found', 'No such account.');
      return c.json(serializeAccount(account), 200);
    })
    .openapi(patchAccount, async (c) => {
      const principal = requireActor(c, ['admin', 'owner'], 'unauthorized');
      const { accountId } = await accountScope(c, orm);
      const body = c.req.valid('json');
      const em = orm.em.fork();
      const account = await em.findOneOrFail(Account, { id: accountId });
      if (body.current_password !== undefined && body.email === undefined)
        throw new ApiError('invalid_request', 'current_password: only sent with a new email.');
      // The sign-in identity of the account: an owner re-authenticates to change it (a stolen access token alone cannot).
      if (
        body.email !== undefined &&
        body.email !== account.email &&
        principal.kind === 'user' &&
        principal.role === 'owner'
      ) {
        const me = await em.findOneOrFail(User, { id: principal.userId });
        await requireCurrentPassword(me.passwordHash, body.current_password);
      }
      if (body.name !== undefined) account.name = body.name;
      if (body.email !== undefined) account.email = body.email;
      if (body.settings) account.settings = { ...account.settings, ...body.settings };
      try {
        await em.transactional(async (tx) => {
          await tx.flush();
          await recordAccountEvent(tx, account, 'account.updated');
        });
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException)
          throw new ApiError('email_exists', 'Another account uses this email.');
        throw error;
      }
      return c.json(serializeAccount(account), 200);
    })
    .openapi(closeAccount, async (c) => {
      requireActor(c, ['admin', 'owner'], 'forbidden');
      const { accountId } = await accountScope(c, orm);
      const em = orm.em.fork();
      const closedAt = new Date();
      await em.transactional(async (tx) => {
        // Serialized with subscription creates on the account's row (services/accounts/lock.ts): none slips in between the count and the close.
        await lockAccount(tx, accountId, 'update');
        const open = await tx.count(Subscription, { accountId, status: { $in: ['trialing', 'active', 'past_due'] } });
        if (open > 0)
          throw new ApiError(
            'active_subscriptions',
            `The account has ${open} active subscription(s); cancel them first.`,
          );
        await tx.nativeUpdate(Account, { id: accountId }, { status: 'closed', closedAt });
        await tx.nativeUpdate(ApiKey, { accountId, revokedAt: null }, { revokedAt: closedAt });
        await tx.nativeUpdate(User, { accountId }, { status: 'suspended' });
        await tx.nativeUpdate(
          Session,
          { accountId, revokedAt: null },
          { revokedAt: closedAt, revokedReason: 'account_closed' },
        );
        await recordAccountEvent(
          tx,
          await tx.findOneOrFail(Account, { id: accountId }, { refresh: true }),
          'account.closed',
        );
      });
      // Its payments end with it: every pending payment request and every recurring one is canceled (links then say so).
      await cancelOpenPaymentRequests(context, accountId);
      // No payout is scheduled for a closed account (its balance stays on the ledger).
      await stopPayoutSchedules(temporal.client, accountId).catch((error: unknown) =>
        logger.warn({ err: error, accountId }, 'closing an account: its payout schedule could not be stopped'),
      );
      // Paused subscriptions do not block closing; they end with the account (their workflows cancel them).
      const paused = await em.find(Subscription, { accountId, status: 'paused' }, { fields: ['id'] });
      await inBatches(paused, (s) =>
        temporal.client.workflow
          .getHandle(s.id)
          .signal(accountClosedSignal)
          .catch((error: unknown) =>
            logger.warn(
              { err: error, accountId, subscriptionId: s.id },
              'closing an account: a paused subscription could not be told',
            ),
          ),
      );
      return c.json(
        { id: accountId, status: 'closed' as const, closed_at: closedAt.toISOString(), message: 'Account closed.' },
        200,
      );
    });
}

/**
 * Cancels an account's recurring payment requests first (so none issues another),
 * then its pending payment requests, in both modes, a few at a time. A request that
 * ends meanwhile (paid, expired) is left as it ended.
 */
async function cancelOpenPaymentRequests(context: ServiceContext, accountId: string): Promise<void> {
  const em = context.orm.em.fork();
  // The account is closed already, so the answer stays 200; a request whose cancel fails here is
  // still refused by the pay page, which takes no payment for a closed account.
  const ignoreEnded = (error: unknown) => {
    const ended =
      error instanceof ApiError
        ? error.code === 'invalid_state'
        : error instanceof WorkflowUpdateFailedError &&
          error.cause instanceof ApplicationFailure &&
          error.cause.type === 'invalid_state';
    if (!ended)
      context.logger.warn({ err: error, accountId }, 'closing an account: a payment request could not be canceled');
  };
  const recurring = await em.find(RecurringPaymentRequest, { accountId, status: 'active' });
  await inBatches(recurring, (row) => cancelRecurringPaymentRequest(context, row, 'account_closed').catch(ignoreEnded));
  const pending = await em.find(PaymentRequest, { accountId, status: 'pending' });
  await inBatches(pending, (row) => cancelPaymentRequest(context, row, 'account_closed').catch(ignoreEnded));
}

async function inBatches<T>(items: T[], run: (item: T) => Promise<unknown>, size = 10): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(run));
}
