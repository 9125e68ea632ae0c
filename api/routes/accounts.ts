import { createRoute, z } from '@hono/zod-openapi';
import { type FilterQuery, UniqueConstraintViolationException } from '@mikro-orm/core';

import { Account, accountTypes, User } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { AccountSchema, serializeAccount, SettingsPatch } from '../../objects/account.ts';
import { recordAccountEvent } from '../../services/accounts/events.ts';
import { hashPassword } from '../auth/passwords.ts';
import { requireActor } from '../auth/principal.ts';
import { SlidingWindowLimiter } from '../auth/rate-limit.ts';
import type { AppDeps } from '../deps.ts';
import { clientIp } from '../middleware/client-ip.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import { emailField, errorResponses, isoInstant, pageQuery, passwordField } from '../schemas.ts';

const CreateAccountBody = z
  .object({
    email: emailField,
    name: z.string().trim().min(1).max(200),
    type: z.enum(accountTypes),
    password: passwordField,
    settings: SettingsPatch.optional(),
  })
  .strict()
  .openapi({
    example: {
      email: 'ada@example.com',
      name: 'Acme Studio',
      type: 'business',
      password: 'Correct-Horse-42!',
      settings: { currency: 'USD', timezone: 'America/New_York', language: 'en' },
    },
  });

/** An ISO 8601 instant within years 1970 to 9999 (PostgreSQL refuses year 0 and far offsets past 9999). */
const ListQuery = z
  .object({
    ...pageQuery,
    status: z.enum(['active', 'suspended', 'closed']).optional(),
    type: z.enum(accountTypes).optional(),
    created_after: isoInstant.optional().openapi({ format: 'date-time' }),
    created_before: isoInstant.optional().openapi({ format: 'date-time' }),
  })
  .strict();

const createAccount = createRoute({
  method: 'post',
  path: '/',
  tags: ['Accounts'],
  summary: 'Create an account (sign up, or admin-created)',
  description:
    "Without a token this is public sign-up (SIGNUP_ENABLED, on by default); with a token it must be an admin's. " +
    "Creates the account and its owner login: the account's email and password work at POST /v1/auth/login at once. " +
    'Sign-ups without a token are limited per client IP (SIGNUPS_PER_IP_PER_HOUR, default 10, per API process): 429 `rate_limited` with Retry-After.',
  // Public: sign-up needs no credential (an admin may still send one).
  security: [],
  request: { body: { content: { 'application/json': { schema: CreateAccountBody } }, required: true } },
  responses: {
    201: { description: 'Created', content: { 'application/json': { schema: AccountSchema } } },
    ...errorResponses(400, 401, 409, 429),
  },
});

const listAccounts = createRoute({
  method: 'get',
  path: '/',
  tags: ['Accounts'],
  summary: 'List accounts (admin)',
  request: { query: ListQuery },
  responses: {
    200: {
      description: 'A page of accounts, without settings',
      content: {
        'application/json': {
          schema: z.object({
            data: z.array(AccountSchema),
            pagination: z.object({
              page: z.number().int(),
              limit: z.number().int(),
              total: z.number().int(),
              has_next: z.boolean(),
            }),
          }),
        },
      },
    },
    ...errorResponses(400, 401, 403),
  },
});

export const defaultSettings = { currency: 'USD', timezone: 'UTC', language: 'en' };

export function accountsApp({ config, context: { orm } }: AppDeps) {
  // Unauthenticated sign-ups per client IP, in this process's memory (docs/security.md).
  const signups = new SlidingWindowLimiter(config.signupsPerIpPerHour, 3600_000);
  return newOpenApiApp()
    .openapi(createAccount, async (c) => {
      if (c.get('principal')) requireActor(c, ['admin'], 'unauthorized');
      else if (!config.auth.signupEnabled)
        throw new ApiError('unauthorized', 'Sign-up is closed: an admin token is required.');
      else {
        const ip = clientIp(c, config.auth.trustProxy);
        const wait = ip === null ? 0 : signups.take(ip);
        if (wait > 0) {
          c.header('Retry-After', String(wait));
          throw new ApiError('rate_limited', `Too many sign-ups from this address. Try again in ${wait} seconds.`);
        }
      }
      const body = c.req.valid('json');
      const em = orm.em.fork();
      const passwordHash = await hashPassword(body.password);
      let account: Account | undefined;
      try {
        await em.transactional(async (tx) => {
          account = tx.create(Account, {
            id: newId('account'),
            email: body.email,
            name: body.name,
            type: body.type,
            status: 'active',
            settings: { ...defaultSettings, ...body.settings },
            closedAt: null,
          });
          tx.create(User, {
            id: newId('user'),
            accountId: account.id,
            email: body.email,
            name: body.name,
            role: 'owner',
            status: 'active',
            passwordHash,
          });
          await tx.flush();
          await recordAccountEvent(tx, account, 'account.created');
        });
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException)
          throw new ApiError('email_exists', 'An account or user with this email already exists.');
        throw error;
      }
      return c.json(serializeAccount(account!), 201);
    })
    .openapi(listAccounts, async (c) => {
      requireActor(c, ['admin'], 'forbidden');
      const query = c.req.valid('query');
      const where: Record<string, unknown> = {};
      if (query.status) where.status = query.status;
      if (query.type) where.type = query.type;
      if (query.created_after || query.created_before) {
        where.createdAt = {
          ...(query.created_after ? { $gt: query.created_after } : {}),
          ...(query.created_before ? { $lt: query.created_before } : {}),
        };
      }
      const [accounts, total] = await orm.em.fork().findAndCount(Account, where as FilterQuery<Account>, {
        orderBy: { createdAt: 'asc', id: 'asc' },
        limit: query.limit,
        offset: (query.page - 1) * query.limit,
      });
      return c.json(
        {
          data: accounts.map((a) => serializeAccount(a, { withSettings: false })),
          pagination: { page: query.page, limit: query.limit, total, has_next: query.page * query.limit < total },
        },
        200,
      );
    });
}
