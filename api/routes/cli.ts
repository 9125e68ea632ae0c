import { createRoute, z } from '@hono/zod-openapi';

import { ApiError } from '../../domain/errors.ts';
import { CliKeySchema } from '../../objects/cli-key.ts';
import {
  approveDeviceLogin,
  collectDeviceLogin,
  deviceCodeTtlSeconds,
  devicePollIntervalSeconds,
  listCliKeys,
  mintCliKey,
  revokeCliKey,
  serializeCliKey,
  startDeviceLogin,
} from '../../services/accounts/cli-keys.ts';
import { accountScope, principalOf, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { errorResponses, idParam } from '../schemas.ts';

const DeviceBody = z
  .object({ name: z.string().trim().min(1).max(100).optional() })
  .strict()
  .openapi({ example: { name: "Ada's laptop" } });
const ApproveBody = z
  .object({ user_code: z.string().max(20), livemode: z.boolean().optional() })
  .strict()
  .openapi({ example: { user_code: 'WDJB-MJHT', livemode: false } });
const TokenBody = z
  .object({ device_code: z.string().min(1).max(200) })
  .strict()
  .openapi({ example: { device_code: 'dc_Qm9yZ2V0LW1lLW5vdC1hLXJlYWwtZGV2aWNlLWNvZGU' } });
const MintBody = z
  .object({ name: z.string().trim().min(1).max(200), mode: z.enum(['test', 'live']).optional() })
  .strict()
  .openapi({ example: { name: 'CI pipeline', mode: 'test' } });

const startDevice = createRoute({
  method: 'post',
  path: '/cli/device',
  tags: ['CLI'],
  summary: 'Start a CLI device login (no credentials)',
  description:
    'The CLI shows `user_code` and `verification_url`; the owner approves; the CLI polls POST /v1/cli/token every `interval` seconds.',
  security: [],
  request: { body: { content: { 'application/json': { schema: DeviceBody } }, required: false } },
  responses: {
    201: {
      description: 'Pending',
      ...json(
        z.object({
          device_code: z.string(),
          user_code: z.string(),
          verification_url: z.string(),
          expires_in: z.number(),
          interval: z.number(),
        }),
      ),
    },
    ...errorResponses(400),
  },
});
const approveDevice = createRoute({
  method: 'post',
  path: '/cli/device/approve',
  tags: ['CLI'],
  summary: 'Approve a CLI device login (owner)',
  description: 'Binds the code to the owner, the account and a mode (`livemode`, by default the mode of the request).',
  request: { body: { content: { 'application/json': { schema: ApproveBody } }, required: true } },
  responses: {
    200: {
      description: 'Approved',
      ...json(z.object({ approved: z.literal(true), device_name: z.string(), livemode: z.boolean() })),
    },
    ...errorResponses(400, 401, 403, 404),
  },
});
const collectToken = createRoute({
  method: 'post',
  path: '/cli/token',
  tags: ['CLI'],
  summary: 'Collect the CLI key of an approved device login (no credentials)',
  description:
    '`authorization_pending` (400) until approved; then the key, with its secret, once; `expired_token` (400) after.',
  security: [],
  request: { body: { content: { 'application/json': { schema: TokenBody } }, required: true } },
  responses: { 200: { description: 'The key', ...json(CliKeySchema) }, ...errorResponses(400) },
});
const mintKey = createRoute({
  method: 'post',
  path: '/cli_keys',
  tags: ['CLI'],
  summary: 'Mint a CLI key for a device (owner session)',
  request: { body: { content: { 'application/json': { schema: MintBody } }, required: true } },
  responses: { 201: { description: 'Minted', ...json(CliKeySchema) }, ...errorResponses(400, 401, 403) },
});
const listKeys = createRoute({
  method: 'get',
  path: '/cli_keys',
  tags: ['CLI'],
  summary: 'List CLI keys, masked (owner)',
  responses: {
    200: { description: 'Keys', ...json(z.object({ object: z.literal('list'), data: z.array(CliKeySchema) })) },
    ...errorResponses(401, 403),
  },
});
const revokeCurrent = createRoute({
  method: 'delete',
  path: '/cli_keys/current',
  tags: ['CLI'],
  summary: 'Revoke the calling CLI key (billing logout)',
  responses: {
    200: {
      description: 'Revoked',
      ...json(z.object({ id: z.string(), object: z.literal('api_key'), revoked: z.literal(true) })),
    },
    ...errorResponses(401, 403),
  },
});
const revokeKey = createRoute({
  method: 'delete',
  path: '/cli_keys/{id}',
  tags: ['CLI'],
  summary: 'Revoke a CLI key (owner)',
  request: { params: idParam('ck') },
  responses: {
    200: {
      description: 'Revoked',
      ...json(z.object({ id: z.string(), object: z.literal('api_key'), revoked: z.literal(true) })),
    },
    ...errorResponses(401, 403, 404),
  },
});
const whoami = createRoute({
  method: 'get',
  path: '/cli/whoami',
  tags: ['CLI'],
  summary: 'The caller: account, mode and, for a CLI key, the key and its user',
  responses: {
    200: {
      description: 'The caller',
      ...json(
        z.object({
          account: z.object({ id: z.string(), name: z.string() }),
          livemode: z.boolean(),
          kind: z.string(),
          user: z.object({ id: z.string(), email: z.string() }).nullable(),
          // Not CliKeySchema.nullable(): on a $ref that became allOf [CliKey, object|null], which null fails.
          key: z
            .union([CliKeySchema, z.null()])
            .openapi({ description: 'The CLI key of the call; null for other credentials' }),
        }),
      ),
    },
    ...errorResponses(401),
  },
});

/** The CLI's endpoints under /v1 (docs/cli.md). */
export function cliApp({ config, context: { orm } }: AppDeps) {
  return newOpenApiApp()
    .openapi(startDevice, async (c) => {
      const body = await optionalJsonBody(c, DeviceBody);
      const { deviceCode, userCode } = await startDeviceLogin(orm, body.name ?? 'a device');
      return c.json(
        {
          device_code: deviceCode,
          user_code: userCode,
          verification_url: `${config.publicUrl}/cli/approve?code=${userCode}`,
          expires_in: deviceCodeTtlSeconds,
          interval: devicePollIntervalSeconds,
        },
        201,
      );
    })
    .openapi(approveDevice, async (c) => {
      const principal = requireActor(c, ['owner'], 'forbidden');
      if (principal.kind !== 'user' || !principal.accountId)
        throw new ApiError('forbidden', 'Only an account owner approves a CLI login.');
      const body = c.req.valid('json');
      const livemode = body.livemode ?? principal.livemode;
      const { deviceName } = await approveDeviceLogin(orm, {
        userCode: body.user_code,
        accountId: principal.accountId,
        userId: principal.userId,
        livemode,
      });
      return c.json({ approved: true as const, device_name: deviceName, livemode }, 200);
    })
    .openapi(collectToken, async (c) => {
      const { row, secret } = await collectDeviceLogin(orm, c.req.valid('json').device_code);
      return c.json({ ...serializeCliKey(row), secret }, 200);
    })
    .openapi(mintKey, async (c) => {
      const principal = requireActor(c, ['owner'], 'forbidden');
      if (principal.kind !== 'user' || !principal.accountId)
        throw new ApiError('forbidden', 'Only an account owner mints CLI keys.');
      const body = c.req.valid('json');
      const [user] = await orm.em
        .getConnection()
        .execute<{ email: string }[]>(`select email from users where id = ?`, [principal.userId]);
      const livemode = body.mode ? body.mode === 'live' : principal.livemode;
      const { row, secret } = await mintCliKey(orm, {
        accountId: principal.accountId,
        userId: principal.userId,
        livemode,
        name: `${user!.email} on ${body.name}`,
      });
      return c.json({ ...serializeCliKey(row), secret }, 201);
    })
    .openapi(listKeys, async (c) => {
      requireActor(c, ['admin', 'owner'], 'forbidden');
      const { accountId } = await accountScope(c, orm);
      return c.json({ object: 'list' as const, data: (await listCliKeys(orm, accountId)).map(serializeCliKey) }, 200);
    })
    .openapi(revokeCurrent, async (c) => {
      const principal = principalOf(c);
      if (principal.kind !== 'cli_key') throw new ApiError('forbidden', 'Only a CLI key revokes itself here.');
      await revokeCliKey(orm, principal.accountId, principal.cliKeyId);
      return c.json({ id: principal.cliKeyId, object: 'api_key' as const, revoked: true as const }, 200);
    })
    .openapi(revokeKey, async (c) => {
      requireActor(c, ['admin', 'owner'], 'forbidden');
      const { accountId } = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      if (!(await revokeCliKey(orm, accountId, id))) throw new ApiError('not_found', 'No such CLI key.');
      return c.json({ id, object: 'api_key' as const, revoked: true as const }, 200);
    })
    .openapi(whoami, async (c) => {
      const principal = principalOf(c);
      const account = c.get('callerAccount');
      if (!account) throw new ApiError('invalid_request', 'This endpoint is for callers of an account.');
      const userId = principal.kind === 'user' || principal.kind === 'cli_key' ? principal.userId : null;
      const [user] = userId
        ? await orm.em
            .getConnection()
            .execute<{ id: string; email: string }[]>(`select id, email from users where id = ?`, [userId])
        : [];
      const key =
        principal.kind === 'cli_key'
          ? (await listCliKeys(orm, principal.accountId)).find((k) => k.id === principal.cliKeyId)
          : undefined;
      return c.json(
        {
          account: { id: account.id, name: account.name },
          livemode: principal.livemode,
          kind: principal.kind,
          user: user ? { id: user.id, email: user.email } : null,
          key: key ? serializeCliKey(key) : null,
        },
        200,
      );
    });
}
