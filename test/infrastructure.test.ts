import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createSmtpMailer } from '../services/email/mailer.ts';
import { type SmtpCapture, startSmtpCapture } from './helpers/smtp.ts';
import { createTimeSkippingEnv } from './helpers/temporal.ts';

describe('test infrastructure', () => {
  describe('time-skipping environment on our own test server', () => {
    let env: TestWorkflowEnvironment;
    beforeAll(async () => {
      env = await createTimeSkippingEnv();
    });
    afterAll(() => env?.teardown());

    it('skips time on demand (the SDK private hook still works)', async () => {
      expect(env.supportsTimeSkipping).toBe(true);
      const before = await env.currentTimeMs();
      const wallBefore = Date.now();
      await env.sleep('400 days');
      expect((await env.currentTimeMs()) - before).toBeGreaterThanOrEqual(400 * 86_400_000);
      expect(Date.now() - wallBefore).toBeLessThan(5_000);
    });
  });

  describe('SMTP capture', () => {
    let smtp: SmtpCapture;
    beforeAll(async () => {
      smtp = await startSmtpCapture();
    });
    afterAll(() => smtp?.close());

    it('receives what the mailer sends over real SMTP and parses it', async () => {
      const mailer = createSmtpMailer(smtp.url, 'Billing <billing@example.com>');
      await mailer.send({
        to: 'ada@example.com',
        subject: 'Your receipt',
        text: 'Paid $20.00',
        html: '<p>Paid <b>$20.00</b></p>',
        messageId: '<evt_1.receipt@billing.local>',
      });
      mailer.close();
      const [mail] = await smtp.waitFor(1);
      expect(mail.envelopeTo).toEqual(['ada@example.com']);
      expect(mail.parsed.subject).toBe('Your receipt');
      expect(mail.parsed.text?.trim()).toBe('Paid $20.00');
      expect(mail.parsed.html).toContain('<b>$20.00</b>');
      expect(mail.parsed.messageId).toBe('<evt_1.receipt@billing.local>');
    });
  });
});
