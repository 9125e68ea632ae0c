import { createRoute, z } from '@hono/zod-openapi';

import { ApiKey } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { ApiKeySchema, serializeApiKey } from '../../objects/api-key.ts';
import { listCliKeys, revokeCliKey, serializeCliKey } from '../../services/accounts/cli-keys.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import { newApiKeySecret, sha256 } from '../auth/tokens.ts';
import type { AppDeps } from '../deps.ts';
import { newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { errorResponses, idParam } from '../schemas.ts';

const CreateKeyBody = z
  .object({ name: z.string().trim().min(1).max(100).optional(), mode: z.enum(['test', 'live']).optional() })
  .strict()
  .openapi({ example: { name: 'Production server', mode: 'live' } });

const createKey = createRoute({
  method: 'post',
  path: '/',
  tags: ['API keys'],
  summary: 'Issue an API key (owner)',
  description:
    'The secret is in this response only. `mode` picks a sandbox (`test`, sk_test_…) or live (`live`, sk_live_…) key; ' +
    'by default it follows the request (x-sandbox-mode: true gives a test key).',
  request: {
    body: {
      content: { 'application/json': { schema: CreateKeyBody } },
      required: false,
    },
  },
  responses: {
    201: { description: 'Issued', content: { 'application/json': { schema: ApiKeySchema } } },
    ...errorResponses(400, 401, 403),
  },
});
const listKeys = createRoute({
  method: 'get',
  path: '/',
  tags: ['API keys'],
  summary: 'List API keys, masked (owner)',
  description: 'Secret keys (`type: "secret"`) then CLI keys (`type: "cli"`, minted by `billing login`, docs/cli.md).',
  responses: {
    200: {
      description: 'Keys',
      content: { 'application/json': { schema: z.object({ object: z.literal('list'), data: z.array(ApiKeySchema) }) } },
    },
    ...errorResponses(401, 403),
  },
});
const revokeKey = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['API keys'],
  summary: 'Revoke an API key or a CLI key (ck_…) (owner)',
  request: { params: idParam('key') },
  responses: {
    200: {
      description: 'Revoked',
      content: {
        'application/json': {
          schema: z.object({ id: z.string(), object: z.literal('api_key'), revoked: z.literal(true) }),
        },
      },
    },
    ...errorResponses(401, 403, 404),
  },
});

export function apiKeysApp({ context: { orm } }: AppDeps) {
  return newOpenApiApp()
    .openapi(createKey, async (c) => {
      const principal = requireActor(c, ['admin', 'owner'], 'forbidden');
      const { accountId, livemode: requestLivemode } = await accountScope(c, orm);
      const body = await optionalJsonBody(c, CreateKeyBody);
      const livemode = body.mode ? body.mode === 'live' : requestLivemode;
      const secret = newApiKeySecret(livemode);
      const em = orm.em.fork();
      const key = em.create(ApiKey, {
        id: newId('apiKey'),
        accountId,
        livemode,
        name: body.name ?? null,
        secretHash: sha256(secret),
        last4: secret.slice(-4),
        createdByUserId: principal.kind === 'user' ? principal.userId : null,
        lastUsedAt: null,
        revokedAt: null,
      });
      await em.flush();
      return c.json({ ...serializeApiKey(key), secret }, 201);
    })
    .openapi(listKeys, async (c) => {
      requireActor(c, ['admin', 'owner'], 'forbidden');
      const { accountId } = await accountScope(c, orm);
      const keys = await orm.em
        .fork()
        .find(ApiKey, { accountId, revokedAt: null }, { orderBy: { createdAt: 'asc', id: 'asc' } });
      const cliKeys = await listCliKeys(orm, accountId);
      return c.json(
        { object: 'list' as const, data: [...keys.map(serializeApiKey), ...cliKeys.map(serializeCliKey)] },
        200,
      );
    })
    .openapi(revokeKey, async (c) => {
      requireActor(c, ['admin', 'owner'], 'forbidden');
      const { accountId } = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      if (id.startsWith('ck_')) {
        if (!(await revokeCliKey(orm, accountId, id))) throw new ApiError('not_found', 'No such API key.');
        return c.json({ id, object: 'api_key' as const, revoked: true as const }, 200);
      }
      const revoked = await orm.em
        .fork()
        .nativeUpdate(ApiKey, { id, accountId, revokedAt: null }, { revokedAt: new Date() });
      if (revoked === 0) throw new ApiError('not_found', 'No such API key.');
      return c.json({ id, object: 'api_key' as const, revoked: true as const }, 200);
    });
}
