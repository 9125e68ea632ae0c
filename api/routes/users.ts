import { createRoute, z } from '@hono/zod-openapi';
import type { FilterQuery } from '@mikro-orm/core';
import { UniqueConstraintViolationException } from '@mikro-orm/core';

import { Account, Session, User, userStatuses } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { serializeUser, UserSchema } from '../../objects/user.ts';
import { hashPassword, requireCurrentPassword } from '../auth/passwords.ts';
import { type Principal, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import { emailField, errorResponses, idParam, pageQuery, passwordField as password } from '../schemas.ts';

const CreateUserBody = z
  .object({
    email: emailField,
    password,
    name: z.string().trim().min(1).max(200).optional(),
    role: z.enum(['owner', 'member']).default('member'),
    account_id: z.string().max(64).optional().openapi({ description: 'Admins only: the account the user joins' }),
  })
  .strict()
  .openapi({
    example: { email: 'grace@example.com', password: 'Correct-Horse-42!', name: 'Grace Hopper', role: 'member' },
  });

const PatchUserBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    status: z.enum(userStatuses).optional(),
    password: password.optional(),
    current_password: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .openapi({ description: 'Required to change your own password: the password you have now' }),
  })
  .strict()
  .openapi({ example: { name: 'Grace B. Hopper' } });

const ListQuery = z
  .object({
    ...pageQuery,
    status: z.enum(userStatuses).optional(),
    search: z.string().trim().min(1).max(200).optional(),
    account_id: z.string().max(64).optional().openapi({ description: 'Admins only: users of one account' }),
  })
  .strict();

const Pagination = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total_pages: z.number().int(),
  total_records: z.number().int(),
});

const listUsers = createRoute({
  method: 'get',
  path: '/',
  tags: ['Users'],
  summary: 'List users',
  description: 'Owners see their account; admins see every user (or one account with account_id). Members are refused.',
  request: { query: ListQuery },
  responses: {
    200: {
      description: 'A page of users',
      content: { 'application/json': { schema: z.object({ data: z.array(UserSchema), pagination: Pagination }) } },
    },
    ...errorResponses(400, 401, 403),
  },
});
const createUser = createRoute({
  method: 'post',
  path: '/',
  tags: ['Users'],
  summary: 'Create a user',
  request: { body: { content: { 'application/json': { schema: CreateUserBody } }, required: true } },
  responses: {
    201: { description: 'Created', content: { 'application/json': { schema: UserSchema } } },
    ...errorResponses(400, 401, 409),
  },
});
const getUser = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Users'],
  summary: 'Retrieve a user',
  request: { params: idParam('usr') },
  responses: {
    200: { description: 'The user', content: { 'application/json': { schema: UserSchema } } },
    ...errorResponses(401, 404),
  },
});
const patchUser = createRoute({
  method: 'patch',
  path: '/{id}',
  tags: ['Users'],
  summary: 'Update a user (partial)',
  description:
    'A member may change their own name and password. Changing your own password needs `current_password` (400 `invalid_request` without it, ' +
    "401 `invalid_credentials` when it is wrong). Another owner's password or status can be changed only by a platform admin (403 `forbidden`). " +
    'A new password ends every other session of that user.',
  request: {
    params: idParam('usr'),
    body: { content: { 'application/json': { schema: PatchUserBody } }, required: true },
  },
  responses: {
    200: { description: 'Updated', content: { 'application/json': { schema: UserSchema } } },
    ...errorResponses(400, 401, 403, 404),
  },
});
const deleteUser = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['Users'],
  summary: 'Delete a user permanently',
  request: { params: idParam('usr') },
  responses: {
    200: {
      description: 'Deleted',
      content: { 'application/json': { schema: z.object({ message: z.string(), id: z.string() }) } },
    },
    ...errorResponses(401, 403, 404),
  },
});

/** Users a principal may see: everyone for an admin, their account for others. */
function visibleUsers(principal: Principal): Record<string, unknown> {
  if (principal.kind === 'user' && principal.role === 'admin') return {};
  return { accountId: principal.accountId };
}

export function usersApp({ context: { orm } }: AppDeps) {
  async function findVisible(principal: Principal, id: string) {
    const em = orm.em.fork();
    const user = await em.findOne(User, { ...visibleUsers(principal), id } as FilterQuery<User>);
    // A member sees only themself; anything else looks like it does not exist.
    if (!user || (principal.kind === 'user' && principal.role === 'member' && user.id !== principal.userId)) {
      throw new ApiError('not_found', 'No such user.');
    }
    return { em, user };
  }

  return newOpenApiApp()
    .openapi(listUsers, async (c) => {
      const principal = requireActor(c, ['admin', 'owner'], 'forbidden');
      const query = c.req.valid('query');
      const where: Record<string, unknown> = { ...visibleUsers(principal) };
      if (query.account_id) {
        if (principal.kind === 'user' && principal.role !== 'admin')
          throw new ApiError('invalid_request', 'account_id is for admin tokens.');
        Object.assign(where, { accountId: query.account_id });
      }
      if (query.status) Object.assign(where, { status: query.status });
      if (query.search) {
        const pattern = `%${query.search.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
        Object.assign(where, { $or: [{ name: { $ilike: pattern } }, { email: { $ilike: pattern } }] });
      }
      const [users, total] = await orm.em.fork().findAndCount(User, where as FilterQuery<User>, {
        orderBy: { createdAt: 'asc', id: 'asc' },
        limit: query.limit,
        offset: (query.page - 1) * query.limit,
      });
      return c.json(
        {
          data: users.map(serializeUser),
          pagination: {
            page: query.page,
            limit: query.limit,
            total_pages: Math.ceil(total / query.limit),
            total_records: total,
          },
        },
        200,
      );
    })
    .openapi(createUser, async (c) => {
      const principal = requireActor(c, ['admin', 'owner'], 'unauthorized');
      const body = c.req.valid('json');
      let accountId = principal.accountId;
      if (principal.kind === 'user' && principal.role === 'admin') {
        if (!body.account_id) throw new ApiError('invalid_request', 'account_id: required for admin-created users.');
        accountId = body.account_id;
      } else if (body.account_id && body.account_id !== principal.accountId) {
        throw new ApiError('invalid_request', 'account_id: owners create users in their own account.');
      }
      const em = orm.em.fork();
      const account = await em.findOne(Account, { id: accountId! });
      if (!account || account.status === 'closed')
        throw new ApiError('invalid_request', 'account_id: no such open account.');
      const user = em.create(User, {
        id: newId('user'),
        accountId: account.id,
        email: body.email,
        name: body.name ?? null,
        role: body.role,
        status: 'active',
        passwordHash: await hashPassword(body.password),
      });
      try {
        await em.flush();
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException)
          throw new ApiError('email_exists', 'A user with this email already exists.');
        throw error;
      }
      return c.json(serializeUser(user), 201);
    })
    .openapi(getUser, async (c) => {
      const principal = requireActor(c, ['admin', 'owner', 'member'], 'unauthorized');
      const { user } = await findVisible(principal, c.req.valid('param').id);
      return c.json(serializeUser(user), 200);
    })
    .openapi(patchUser, async (c) => {
      const principal = requireActor(c, ['admin', 'owner', 'member'], 'unauthorized');
      if (principal.kind !== 'user') throw new ApiError('unauthorized', 'API keys cannot manage users.');
      const body = c.req.valid('json');
      const { em, user } = await findVisible(principal, c.req.valid('param').id);
      const self = user.id === principal.userId;
      if (body.current_password !== undefined && body.password === undefined) {
        throw new ApiError('invalid_request', 'current_password: only sent with a new password.');
      }
      // One owner cannot take over another: only a platform admin, or the owner themself, changes an owner's password or status.
      if (
        !self &&
        user.role === 'owner' &&
        principal.role !== 'admin' &&
        (body.password !== undefined || body.status !== undefined)
      ) {
        throw new ApiError('forbidden', "Only a platform admin can change another owner's password or status.");
      }
      if (body.password !== undefined && self) await requireCurrentPassword(user.passwordHash, body.current_password);
      if (body.status !== undefined) {
        if (principal.role === 'member') throw new ApiError('unauthorized', 'Members cannot change a status.');
        if (self) throw new ApiError('invalid_request', 'status: you cannot change your own status.');
      }
      if (body.name !== undefined) user.name = body.name;
      if (body.status !== undefined) user.status = body.status;
      if (body.password !== undefined) user.passwordHash = await hashPassword(body.password);
      await em.flush();
      if (body.password !== undefined || (body.status !== undefined && body.status !== 'active')) {
        // A new password or a suspension ends the user's other sessions now.
        const keep = self && principal.kind === 'user' ? principal.sessionId : '';
        await em.nativeUpdate(
          Session,
          { userId: user.id, revokedAt: null, id: { $ne: keep } },
          { revokedAt: new Date(), revokedReason: 'user_changed' },
        );
      }
      return c.json(serializeUser(user), 200);
    })
    .openapi(deleteUser, async (c) => {
      const principal = requireActor(c, ['admin', 'owner'], 'forbidden');
      const { em, user } = await findVisible(principal, c.req.valid('param').id);
      if (principal.kind === 'user' && user.id === principal.userId)
        throw new ApiError('invalid_request', 'You cannot delete yourself.');
      if (user.role === 'owner' && principal.kind === 'user' && principal.role !== 'admin') {
        throw new ApiError('forbidden', 'Only an admin can delete an owner; close the account instead.');
      }
      await em.transactional(async (tx) => {
        await tx.nativeUpdate(
          Session,
          { userId: user.id, revokedAt: null },
          { revokedAt: new Date(), revokedReason: 'user_deleted' },
        );
        await tx.nativeDelete(User, { id: user.id });
      });
      return c.json({ message: 'User deleted.', id: user.id }, 200);
    });
}
