/**
 * Password reset for people who signed up (POST /v1/auth/password_reset, .../confirm): the first
 * emails a one-hour link to the dashboard's reset page; the second sets the new password from that
 * link and ends every session of the user. The first answers the same whether or not the email is
 * known, so it tells nobody who has an account.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { LockMode } from '@mikro-orm/core';

import { Session, User } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { createMailer } from '../../services/email/mailer.ts';
import { createPasswordResetTokens, passwordResetTtlMinutes } from '../auth/password-reset.ts';
import { hashPassword } from '../auth/passwords.ts';
import { SlidingWindowLimiter } from '../auth/rate-limit.ts';
import type { AppDeps } from '../deps.ts';
import { clientIp } from '../middleware/client-ip.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { emailField, errorResponses, passwordField } from '../schemas.ts';

const RequestBody = z
  .object({ email: emailField })
  .strict()
  .openapi({ example: { email: 'ada@example.com' } });
const ConfirmBody = z
  .object({
    token: z
      .string()
      .min(1)
      .max(2000)
      .openapi({ description: "The token of the emailed link (after `#token=` in the dashboard's reset page)" }),
    password: passwordField,
  })
  .strict()
  .openapi({ example: { token: 'eyJhbGciOiJIUzI1NiJ9.eyJwaCI6Ii4uLiJ9.sig', password: 'Another-Horse-43!' } });

const RequestAnswer = z
  .object({ object: z.literal('password_reset'), email: z.string(), expires_in_minutes: z.number().int() })
  .openapi('PasswordResetRequested', {
    example: { object: 'password_reset', email: 'ada@example.com', expires_in_minutes: 60 },
  });
const ConfirmAnswer = z
  .object({ object: z.literal('password_reset'), reset: z.literal(true), sessions_ended: z.number().int() })
  .openapi('PasswordResetDone', { example: { object: 'password_reset', reset: true, sessions_ended: 2 } });

const tags = ['Auth'];
const requestReset = createRoute({
  method: 'post',
  path: '/password_reset',
  tags,
  summary: 'Email a password-reset link',
  description:
    `Public. When a user has this email, a link to the dashboard's reset page (${'`'}/dashboard/reset-password#token=…${'`'}) is emailed to it, valid ${passwordResetTtlMinutes} minutes and once. ` +
    'The answer is the same whether or not the email is known. At most 5 requests per email and 20 per client IP an hour (per API process): 429 `rate_limited` with Retry-After.',
  security: [],
  request: { body: { ...json(RequestBody), required: true } },
  responses: {
    202: { description: 'Accepted (sent when the email is known)', ...json(RequestAnswer) },
    ...errorResponses(400, 429),
  },
});
const confirmReset = createRoute({
  method: 'post',
  path: '/password_reset/confirm',
  tags,
  summary: 'Set a new password from a reset link',
  description:
    'Sets the password (the same policy as sign-up) and ends every session of the user (their refresh tokens and dashboard cookies stop working). ' +
    'A link works once: the new password makes it, and any older link, invalid (400 `invalid_grant`), as does its expiry.',
  security: [],
  request: { body: { ...json(ConfirmBody), required: true } },
  responses: { 200: { description: 'The password is set', ...json(ConfirmAnswer) }, ...errorResponses(400) },
});

export function passwordResetApp({ config, context: { orm } }: AppDeps) {
  const tokens = createPasswordResetTokens(config.auth.secret);
  const perEmail = new SlidingWindowLimiter(5, 3600_000);
  const perIp = new SlidingWindowLimiter(20, 3600_000);
  const mailer = createMailer(config);
  return newOpenApiApp()
    .openapi(requestReset, async (c) => {
      const { email } = c.req.valid('json');
      const ip = clientIp(c, config.auth.trustProxy);
      const wait = Math.max(ip === null ? 0 : perIp.take(ip), perEmail.take(email));
      if (wait > 0) {
        c.header('Retry-After', String(wait));
        throw new ApiError('rate_limited', `Too many reset requests. Try again in ${wait} seconds.`);
      }
      const user = await orm.em.fork().findOne(User, { email });
      if (user && user.status === 'active') {
        const token = await tokens.sign(user);
        const url = `${config.publicUrl}/dashboard/reset-password#token=${token}`;
        await mailer.send({
          to: user.email,
          subject: 'Reset your password',
          text:
            `Hello${user.name ? ` ${user.name}` : ''},\n\nSomeone (we hope you) asked to reset the password of ${user.email}. ` +
            `Choose a new one here; the link works once, for ${passwordResetTtlMinutes} minutes:\n${url}\n\n` +
            'If it was not you, ignore this email: your password stays as it is.\n',
        });
      }
      return c.json({ object: 'password_reset' as const, email, expires_in_minutes: passwordResetTtlMinutes }, 202);
    })
    .openapi(confirmReset, async (c) => {
      const body = c.req.valid('json');
      const invalid = new ApiError('invalid_grant', 'This reset link is invalid, used or expired; ask for a new one.');
      const claims = await tokens.verify(body.token);
      if (!claims) throw invalid;
      const newHash = await hashPassword(body.password);
      const ended = await orm.em.fork().transactional(async (em) => {
        // Locked: of two confirmations with one link, the second sees the new hash and is refused.
        const user = await em.findOne(
          User,
          { id: claims.userId },
          { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
        );
        if (!user || user.status !== 'active' || !claims.matches(user.passwordHash)) throw invalid;
        user.passwordHash = newHash;
        await em.flush();
        return em.nativeUpdate(
          Session,
          { userId: user.id, revokedAt: null },
          { revokedAt: new Date(), revokedReason: 'password_reset' },
        );
      });
      return c.json({ object: 'password_reset' as const, reset: true as const, sessions_ended: ended }, 200);
    });
}
