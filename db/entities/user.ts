import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

export const userRoles = ['admin', 'owner', 'member'] as const;
export const userStatuses = ['active', 'suspended', 'pending'] as const;
export type UserRole = (typeof userRoles)[number];
export type UserStatus = (typeof userStatuses)[number];

/**
 * A login. Platform admins have no account; owners and members belong to one.
 * Emails are unique across the platform (they are the login name), stored lower-case.
 */
export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.string().primary(),
    accountId: p.string().nullable().index(),
    email: p.string().unique(),
    name: p.string().nullable(),
    role: p.string().$type<UserRole>(),
    status: p.string().$type<UserStatus>(),
    passwordHash: p.string().hidden(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type User = InferEntity<typeof User>;
