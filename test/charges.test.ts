import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createActivities } from '../activities/index.ts';
import { Account, Charge, Customer, SandboxProcessorCharge } from '../db/entities/index.ts';
import { createCustomerLinks } from '../domain/customer-links.ts';
import { createSmtpMailer, type Mailer } from '../services/email/mailer.ts';
import type { ChargeOutcome } from '../services/money/charges.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { type SmtpCapture, startSmtpCapture } from './helpers/smtp.ts';

describe('charge activity', () => {
  let db: TestDatabase;
  let smtp: SmtpCapture;
  let mailer: Mailer;
  let activities: ReturnType<typeof createActivities>;
  const activityEnv = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

  beforeAll(async () => {
    db = await createTestDatabase();
    smtp = await startSmtpCapture();
    mailer = createSmtpMailer(smtp.url, 'Billing <billing@test.example>');
    activities = createActivities({
      orm: db.orm,
      mailer,
      links: createCustomerLinks({ publicUrl: 'http://localhost', secret: 'test' }),
    });
    const em = db.orm.em.fork();
    const tenant = { accountId: 'acct_test', livemode: false };
    // Every charge attempt is a payment transaction of the account: the account exists.
    em.create(Account, {
      id: 'acct_test',
      email: 'owner@example.com',
      name: 'Test',
      type: 'business',
      status: 'active',
      settings: { currency: 'USD', timezone: 'UTC', language: 'en' },
    });
    em.create(Customer, { id: 'cus_visa', email: 'a@example.com', paymentMethod: 'pm_card_visa', ...tenant });
    em.create(Customer, {
      id: 'cus_declined',
      email: 'b@example.com',
      paymentMethod: 'pm_card_chargeDeclined',
      ...tenant,
    });
    em.create(Customer, { id: 'cus_none', email: 'c@example.com', paymentMethod: null, ...tenant });
    await em.flush();
  });
  afterAll(async () => {
    mailer?.close();
    await smtp?.close();
    await db?.close();
  });

  const charge = (key: string, customerId = 'cus_visa', amount = 1500) =>
    activityEnv.run(activities.charge, {
      idempotencyKey: key,
      invoiceId: 'in_none',
      attempt: 1,
      accountId: 'acct_test',
      customerId,
      amount,
      currency: 'USD',
      description: 'test',
      livemode: false,
    }) as Promise<ChargeOutcome>;
  const count = async (key: string) => ({
    ours: await db.orm.em.fork().count(Charge, { idempotencyKey: key }),
    processor: await db.orm.em.fork().count(SandboxProcessorCharge, { idempotencyKey: key }),
  });

  it('run twice with the same key, charges once and answers the same both times', async () => {
    const first = await charge('sub_x:cycle:0:attempt:1');
    const second = await charge('sub_x:cycle:0:attempt:1');
    expect(first.status).toBe('succeeded');
    expect(second).toEqual(first);
    expect(await count('sub_x:cycle:0:attempt:1')).toEqual({ ours: 1, processor: 1 });
  });

  it('run concurrently with the same key, still charges once', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => charge('sub_y:cycle:0:attempt:1')));
    expect(new Set(results.map((r) => r.chargeId)).size).toBe(1);
    expect(await count('sub_y:cycle:0:attempt:1')).toEqual({ ours: 1, processor: 1 });
  });

  it('a different key is a different charge', async () => {
    await charge('sub_x:cycle:1:attempt:1');
    expect(await count('sub_x:cycle:1:attempt:1')).toEqual({ ours: 1, processor: 1 });
  });

  it('a declined card is an outcome with its reason, not an error', async () => {
    const result = await charge('sub_d:cycle:0:attempt:1', 'cus_declined');
    expect(result).toMatchObject({
      status: 'failed',
      failureCode: 'card_declined',
      failureMessage: 'Your card was declined.',
    });
  });

  it('no payment method fails without reaching the processor', async () => {
    const result = await charge('sub_n:cycle:0:attempt:1', 'cus_none');
    expect(result).toMatchObject({ status: 'failed', chargeId: null, failureCode: 'no_payment_method' });
    expect(await count('sub_n:cycle:0:attempt:1')).toEqual({ ours: 0, processor: 0 });
  });

  it('refuses to reuse a key for a different amount', async () => {
    const processorOnly = createActivities({
      orm: db.orm,
      mailer,
      links: createCustomerLinks({ publicUrl: 'http://localhost', secret: 'test' }),
    });
    await db.orm.em.fork().nativeDelete(Charge, { idempotencyKey: 'sub_x:cycle:0:attempt:1' });
    await expect(
      activityEnv.run(processorOnly.charge, {
        idempotencyKey: 'sub_x:cycle:0:attempt:1',
        invoiceId: 'in_none',
        attempt: 1,
        accountId: 'acct_test',
        customerId: 'cus_visa',
        amount: 9999,
        currency: 'USD',
        description: 't',
        livemode: false,
      }),
    ).rejects.toThrow(/already used for a different charge/);
  });

  it('sends an email once per dedupe key, over real SMTP, however often the activity runs', async () => {
    const email = { dedupeKey: 'test:receipt:1', to: 'ada@example.com', subject: 'Your receipt', text: 'Thanks.' };
    const send = () => activityEnv.run(activities.sendEmail, email) as Promise<{ sent: boolean; messageId: string }>;
    // Three attempts at once: one sends, the others are told to retry later.
    const runs = await Promise.allSettled([send(), send(), send()]);
    const sent = runs.filter((r) => r.status === 'fulfilled' && r.value.sent);
    expect(sent).toHaveLength(1);
    for (const r of runs)
      if (r.status === 'rejected') expect(String(r.reason)).toMatch(/being sent by another attempt/);
    await smtp.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(smtp.messages).toHaveLength(1);
    expect(smtp.messages[0]!.parsed.subject).toBe('Your receipt');
    expect(smtp.messages[0]!.envelopeTo).toEqual(['ada@example.com']);
    // The retry after the send finds it sent.
    expect(await send()).toEqual({ sent: false, messageId: smtp.messages[0]!.parsed.messageId });
  });
});
