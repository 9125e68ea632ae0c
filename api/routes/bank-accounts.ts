import { createRoute, z } from '@hono/zod-openapi';

import { BankAccount } from '../../db/entities/index.ts';
import { accountHolderTypes, destinationTypes } from '../../domain/bank-accounts.ts';
import { createSecretBox } from '../../domain/secret-box.ts';
import { BankAccountSchema, serializeBankAccount } from '../../objects/bank-account.ts';
import { currency, metadata } from '../../objects/common.ts';
import {
  createBankAccount,
  deleteBankAccount,
  findBankAccount,
  updateBankAccount,
} from '../../services/payouts/bank-accounts.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { resourceId } from '../middleware/idempotency.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

const tags = ['Bank accounts'];
const field = (max: number) => z.string().min(1).max(max);

const CreateBody = z
  .object({
    type: z.enum(destinationTypes).openapi({
      description: 'us_ach (USD), sepa (EUR), uk (GBP), wire (USD, EUR, GBP; BIC required), paypal (USD, EUR, GBP)',
    }),
    account_holder_name: field(200),
    account_holder_type: z.enum(accountHolderTypes).optional(),
    country: z.string().length(2).optional(),
    currency: currency.openapi({ description: 'USD, EUR (requires an IBAN) or GBP' }),
    routing_number: field(20).optional().openapi({ description: 'us_ach: 9-digit ABA routing number' }),
    account_number: field(40).optional().openapi({
      description:
        'us_ach (4-17 digits), uk (8 digits), wire (4-34 letters and digits); stored encrypted, never shown again',
    }),
    iban: field(50).optional().openapi({ description: 'sepa, or a wire in EUR; stored encrypted' }),
    bic: field(15).optional(),
    sort_code: field(10).optional().openapi({ description: 'uk: 6 digits' }),
    email: field(254).optional().openapi({ description: 'paypal: the receiver; stored encrypted, shown masked' }),
    default_for_currency: z.boolean().optional(),
    metadata: metadata.optional(),
  })
  .strict()
  .openapi({
    example: {
      type: 'us_ach',
      account_holder_name: 'Acme Studio LLC',
      account_holder_type: 'company',
      country: 'US',
      currency: 'USD',
      routing_number: '110000000',
      account_number: '000123456789',
      default_for_currency: true,
    },
  });

const UpdateBody = z
  .object({
    account_holder_name: field(200).optional(),
    account_holder_type: z.enum(accountHolderTypes).optional(),
    default_for_currency: z.boolean().optional(),
    metadata: metadata.optional(),
  })
  .strict()
  .openapi({ example: { account_holder_name: 'Acme Studio LLC', default_for_currency: true } });

const ListQuery = z
  .object({
    ...cursorQuery('bankAccount'),
    currency: z
      .string()
      .length(3)
      .transform((c) => c.toUpperCase())
      .optional(),
    default_for_currency: queryBoolean.optional(),
  })
  .strict()
  .refine(...oneCursor);

const create = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Add a payout destination',
  description:
    'A bank account (US ACH, SEPA, UK, wire) or a PayPal receiver. Every number is checked (ABA 3-7-1 checksum, IBAN length per country and mod 97, sort code, BIC); ' +
    'a refusal (`invalid_request`) names the check that failed. The full number is stored encrypted and never shown again: `last4` and `fingerprint`. ' +
    'The same account twice in one mode is `conflict`. The first destination of a currency is its default. Event: bank_account.created. Owners, admins and API keys.',
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Created', ...json(BankAccountSchema) }, ...errorResponses(400, 401, 403, 409) },
});
const list = listRoute({
  tags,
  summary: 'List payout destinations, newest first',
  query: ListQuery,
  item: BankAccountSchema,
});
const get = createRoute({
  method: 'get',
  path: '/{id}',
  tags,
  summary: 'Retrieve a payout destination',
  request: { params: idParam('ba') },
  responses: { 200: { description: 'The destination', ...json(BankAccountSchema) }, ...errorResponses(401, 404) },
});
const update = createRoute({
  method: 'patch',
  path: '/{id}',
  tags,
  summary: 'Update a payout destination',
  description:
    'Holder name and type, metadata, `default_for_currency: true` (the previous default stops being one). Numbers cannot change: add a new destination. Event: bank_account.updated.',
  request: { params: idParam('ba'), body: { ...json(UpdateBody), required: true } },
  responses: { 200: { description: 'Updated', ...json(BankAccountSchema) }, ...errorResponses(400, 401, 403, 404) },
});
const remove = createRoute({
  method: 'delete',
  path: '/{id}',
  tags,
  summary: 'Delete a payout destination',
  description:
    'Refused (`conflict`) while a payout to it is pending or in transit, or for the default of a currency with other destinations. Event: bank_account.deleted.',
  request: { params: idParam('ba') },
  responses: {
    200: {
      description: 'Deleted',
      ...json(
        z.object({ id: z.string(), object: z.enum(['bank_account', 'paypal_account']), deleted: z.literal(true) }),
      ),
    },
    ...errorResponses(401, 403, 404, 409),
  },
});

export function bankAccountsApp(deps: AppDeps) {
  const { orm } = deps.context;
  const keys = { box: createSecretBox(deps.config.auth.secret, 'bank-accounts'), authSecret: deps.config.auth.secret };
  const notFound = (id: string, scope: { accountId: string; livemode: boolean }) =>
    notFoundInMode(orm.em, BankAccount, id, scope, 'bank account');
  return newOpenApiApp()
    .openapi(create, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const id = resourceId(c, 'bankAccount');
      const em = orm.em.fork();
      if (c.get('idempotency')?.takeover) {
        const existing = await em.findOne(BankAccount, { id, accountId, livemode });
        if (existing) return c.json(serializeBankAccount(existing), 201);
      }
      const row = await createBankAccount(em, keys, { accountId, livemode }, { ...body, id });
      return c.json(serializeBankAccount(row), 201);
    })
    .openapi(list, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode, deletedAt: null };
      if (query.currency) where.currency = query.currency;
      if (query.default_for_currency !== undefined) where.defaultForCurrency = query.default_for_currency;
      const { page, hasMore } = await keysetPage(orm.em.fork(), BankAccount, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializeBankAccount), has_more: hasMore }, 200);
    })
    .openapi(get, async (c) => {
      const scope = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      const row = await findBankAccount(orm.em.fork(), { accountId: scope.accountId, livemode: scope.livemode }, id);
      if (!row) throw await notFound(id, scope);
      return c.json(serializeBankAccount(row), 200);
    })
    .openapi(update, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const scope = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      const row = await updateBankAccount(
        orm.em.fork(),
        { accountId: scope.accountId, livemode: scope.livemode },
        id,
        c.req.valid('json'),
      );
      if (!row) throw await notFound(id, scope);
      return c.json(serializeBankAccount(row), 200);
    })
    .openapi(remove, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const scope = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      const row = await deleteBankAccount(orm.em.fork(), { accountId: scope.accountId, livemode: scope.livemode }, id);
      if (!row) throw await notFound(id, scope);
      return c.json(
        {
          id: row.id,
          object: row.type === 'paypal' ? ('paypal_account' as const) : ('bank_account' as const),
          deleted: true as const,
        },
        200,
      );
    });
}
