import type { MikroORM } from '@mikro-orm/postgresql';

import type { AuthConfig } from '../../config.ts';
import { ConfigError } from '../../config.ts';
import { User } from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import { passwordPolicyProblem } from '../../domain/passwords.ts';
import { hashPassword } from './passwords.ts';

/**
 * Creates the platform admin from ADMIN_EMAIL / ADMIN_PASSWORD when no user has
 * that email yet. An existing admin keeps its password (change it through the API).
 */
export async function ensureAdmin(orm: MikroORM, auth: AuthConfig): Promise<void> {
  const problem = passwordPolicyProblem(auth.adminPassword);
  if (problem) throw new ConfigError(`ADMIN_PASSWORD fails the password policy: ${problem}.`);
  const em = orm.em.fork();
  if (await em.findOne(User, { email: auth.adminEmail })) return;
  em.create(User, {
    id: newId('user'),
    accountId: null,
    email: auth.adminEmail,
    name: 'Platform admin',
    role: 'admin',
    status: 'active',
    passwordHash: await hashPassword(auth.adminPassword),
  });
  await em.flush();
}
