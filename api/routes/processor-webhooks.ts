/**
 * POST /webhooks/stripe: Stripe's webhooks (docs/processors.md). No API credentials:
 * the Stripe-Signature header over the raw body is the credential. It is checked
 * with the live mode's signing secret, then the test mode's (each mode whose
 * processor is Stripe); the event's own `livemode` must be the mode whose secret
 * verified it. 400 `invalid_signature` otherwise, and nothing is recorded.
 * A verified event answers 200 once it is recorded (and acted on:
 * services/money/processor-events.ts); Stripe retries anything else.
 */
import { Hono } from 'hono';

import { Customer } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { notifyPaymentMethodUpdated } from '../../services/customers/events.ts';
import { handleProcessorEvent } from '../../services/money/processor-events.ts';
import { settleCheckoutPayment } from '../../services/payment-requests/commands.ts';
import { type ProcessorEvent, ProcessorSignatureError } from '../../services/processors/types.ts';
import type { AppDeps } from '../deps.ts';

export function processorWebhooksApp({ context }: AppDeps) {
  const { orm, processors, logger } = context;
  return new Hono().post('/stripe', async (c) => {
    // The exact bytes Stripe signed: read as text, never re-serialized.
    const raw = await c.req.text();
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((value, name) => {
      headers[name] = value;
    });
    let verified: { livemode: boolean; event: ProcessorEvent } | null = null;
    for (const livemode of [true, false]) {
      const processor = processors.forMode(livemode);
      if (processor.name !== 'stripe') continue;
      try {
        verified = { livemode, event: processor.parseWebhook(raw, headers) };
        break;
      } catch (error) {
        if (!(error instanceof ProcessorSignatureError)) throw error;
      }
    }
    if (!verified)
      throw new ApiError(
        'invalid_signature',
        'The Stripe-Signature header does not verify with the webhook signing secret of a Stripe-backed mode.',
      );
    const payload = JSON.parse(raw) as { id?: unknown; type?: unknown; livemode?: unknown };
    if (payload.livemode !== verified.livemode) {
      throw new ApiError(
        'invalid_signature',
        `A ${payload.livemode ? 'live' : 'test'} mode event signed with the ${verified.livemode ? 'live' : 'test'} mode secret.`,
      );
    }
    if (typeof payload.id !== 'string' || typeof payload.type !== 'string')
      throw new ApiError('invalid_request', 'Not a Stripe event.');
    let event = verified.event;
    // Webhook objects are not expanded: a setup session's card is read from its SetupIntent.
    if (event.type === 'checkout.completed' && !event.paymentMethod && event.setupIntentId) {
      event = {
        ...event,
        paymentMethod: await processors.forMode(verified.livemode).setupPaymentMethod(event.setupIntentId),
      };
    }
    const result = await handleProcessorEvent(
      orm.em.fork(),
      {
        processor: 'stripe',
        eventId: payload.id,
        type: payload.type,
        livemode: verified.livemode,
        payload: payload as Record<string, unknown>,
        event,
      },
      {
        settleCheckout: (input) => settleCheckoutPayment(context, input),
      },
    );
    logger.info({ eventId: payload.id, type: payload.type, livemode: verified.livemode, ...result }, 'stripe webhook');
    // A new card from the billing-details page: past-due invoices are retried with it now, as after PATCH /v1/customers.
    if (result.action === 'payment_method_saved' && result.customerId) {
      const customer = await orm.em.fork().findOne(Customer, { id: result.customerId });
      if (customer) await notifyPaymentMethodUpdated(context, customer);
    }
    return c.json({ received: true, duplicate: result.duplicate, action: result.action }, 200);
  });
}
