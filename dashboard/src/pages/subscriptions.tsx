import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';

import { priceFor, type Pricing, type Tier } from '../../../domain/pricing.ts';
import { api, currentMode, date, money, type Schemas, unwrap } from '../api.ts';
import type { Discount } from '../billing-types.ts';
import { CustomerName, CustomerPicker, PlanName, PlanPicker } from '../pickers.tsx';
import { ActionButton, ActionForm, ErrorNote, Field, PagedTable, PageTitle, Status } from '../ui.tsx';
import { DiscountCard } from './customer-billing.tsx';
import { InvoiceLines } from './invoices.tsx';
import { describePlan } from './plans.tsx';
import { SubscriptionTaxRatesCard } from './tax-rates.tsx';

/** A plan's price in `currency` (its own, or one of its currency_options), as domain/pricing.ts computes it; null when it has none there. */
function pricingOf(plan: Schemas['Plan'], currency: string): Pricing | null {
  const option = currency === plan.currency ? null : plan.currency_options?.[currency];
  if (currency !== plan.currency && !option) return null;
  const amount = option ? option.amount : plan.amount;
  if (plan.pricing_scheme === 'tiered')
    return {
      scheme: 'tiered',
      tiers_mode: plan.tiers_mode ?? 'graduated',
      tiers: (option?.tiers ?? plan.tiers ?? []) as Tier[],
    };
  if (plan.pricing_scheme === 'package')
    return { scheme: 'package', amount, package_size: plan.package_size ?? 1, round: plan.package_round ?? 'up' };
  return { scheme: 'per_unit', amount };
}

const amountAt = (pricing: Pricing | null, quantity: number) => {
  try {
    return pricing ? priceFor(pricing, quantity).amount : null;
  } catch {
    return null;
  }
};

/**
 * What a quantity change will do, before it is sent (the rules of POST /v1/subscriptions/{id}/update,
 * docs/pricing.md): more now, prorated; fewer at the renewal; in a trial, at once without a charge.
 */
export function quantityChangeText(
  s: Schemas['Subscription'],
  plan: Schemas['Plan'] | undefined,
  quantity: number,
  now = Date.now(),
): string {
  if (!Number.isSafeInteger(quantity) || quantity < 1) return 'A quantity is a whole number from 1.';
  const currency = s.currency ?? plan?.currency ?? 'USD';
  const pricing = plan ? pricingOf(plan, currency) : null;
  const current = amountAt(pricing, s.quantity);
  const next = amountAt(pricing, quantity);
  const per = (amount: number | null, q: number) =>
    amount === null ? `${q}` : `${q} (${money(amount, currency)} a period)`;
  if (quantity === s.quantity && !s.pending_plan) return `${quantity} is the current quantity: nothing to change.`;
  if (quantity === s.quantity) return `Back to ${quantity}: drops the change waiting for the renewal.`;
  if (s.status === 'trialing')
    return `In the trial the quantity changes at once, with no charge: the first invoice bills ${per(next, quantity)}.`;
  if (current !== null && next !== null && next > current) {
    if (!s.current_period_start || !s.current_period_end)
      return `More: takes effect now, the rest of the period prorated and charged now; then ${per(next, quantity)}.`;
    const start = Date.parse(s.current_period_start);
    const end = Date.parse(s.current_period_end);
    const left = Math.min(1, Math.max(0, (end - now) / (end - start)));
    const days = Math.round((end - now) / 86_400_000);
    const charge = Math.round(next * left) - Math.round(current * left);
    return (
      `More: takes effect now. The unused ${days} day${days === 1 ? '' : 's'} of this period at ${per(current, s.quantity)} are credited and the same days at ` +
      `${per(next, quantity)} charged, about ${money(charge, currency)} today; the renewal on ${date(s.current_period_end)} bills ${money(next, currency)}.`
    );
  }
  return `Fewer: waits for the renewal on ${date(s.current_period_end)} (shown as pending quantity); until then ${per(current, s.quantity)} stay billed, then ${per(next, quantity)}.`;
}

function QuantityChange({ s, plan }: { s: Schemas['Subscription']; plan: Schemas['Plan'] | undefined }) {
  const [quantity, setQuantity] = useState(String(s.quantity));
  const wanted = Number(quantity);
  return (
    <ActionForm
      title="Change quantity"
      submit="Change quantity"
      action={() =>
        unwrap(
          api.POST('/v1/subscriptions/{id}/update', { params: { path: { id: s.id } }, body: { quantity: wanted } }),
        )
      }
      done={() => setQuantity(String(wanted))}
    >
      <div className="field">
        <label htmlFor="new-quantity">New quantity</label>
        <input
          id="new-quantity"
          name="quantity"
          type="number"
          min={1}
          step={1}
          required
          value={quantity}
          onChange={(e) => setQuantity(e.target.value)}
        />
      </div>
      <p className="muted" aria-live="polite" data-testid="proration">
        {quantityChangeText(s, plan, wanted)}
      </p>
    </ActionForm>
  );
}

const statuses = ['trialing', 'active', 'past_due', 'paused', 'canceled', 'expired'] as const;
type SubscriptionStatus = (typeof statuses)[number];

export function Subscriptions() {
  const [status, setStatus] = useState<SubscriptionStatus | ''>('');
  const [customer, setCustomer] = useState('');
  return (
    <>
      <PageTitle>Subscriptions</PageTitle>
      <ActionForm
        title="New subscription"
        submit="Create subscription"
        action={(v) => {
          const quantity = v.quantity ? Number(v.quantity) : 1;
          const currency = v.currency || undefined;
          // A setup fee (a one-time plan) rides on the first invoice: the body is then `items`.
          const body = v.setup_fee
            ? { customer_id: v.customer_id!, items: [{ plan: v.plan!, quantity }, { plan: v.setup_fee }], currency }
            : { customer_id: v.customer_id!, plan: v.plan!, quantity, currency };
          return unwrap(api.POST('/v1/subscriptions', { body }));
        }}
      >
        <CustomerPicker name="customer_id" required />
        <PlanPicker name="plan" required />
        <Field label="Quantity" name="quantity" type="number" defaultValue={1} />
        <div className="field">
          <label htmlFor="new-sub-currency">Bill in</label>
          <select id="new-sub-currency" name="currency" defaultValue="">
            <option value="">the plan&apos;s currency</option>
            {['USD', 'EUR', 'GBP', 'JPY', 'CAD', 'AUD', 'CHF'].map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </div>
        <PlanPicker name="setup_fee" label="Setup fee (a one-time plan, optional)" oneTime />
      </ActionForm>
      <div className="filters" role="search" aria-label="Filter subscriptions">
        <div className="field">
          <label htmlFor="sub-status">Status</label>
          <select id="sub-status" value={status} onChange={(e) => setStatus(e.target.value as SubscriptionStatus | '')}>
            <option value="">any</option>
            {statuses.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </div>
        <CustomerPicker value={customer} onChange={setCustomer} anyLabel="Any customer" />
      </div>
      <PagedTable
        key={`${status}:${customer}`}
        label="Subscriptions"
        queryKey={['subscriptions', status, customer]}
        fetchPage={(cursor) =>
          unwrap(
            api.GET('/v1/subscriptions', {
              params: {
                query: { limit: 20, ...cursor, status: status || undefined, customer_id: customer || undefined },
              },
            }),
          )
        }
        columns={[
          {
            header: 'Subscription',
            cell: (s) => (
              <Link to="/subscriptions/$id" params={{ id: s.id }}>
                {s.id}
              </Link>
            ),
          },
          { header: 'Customer', cell: (s) => <CustomerName id={s.customer_id} withEmail /> },
          {
            header: 'Plan',
            cell: (s) => (
              <>
                <PlanName id={s.plan} />
                {s.quantity !== 1 ? ` × ${s.quantity}` : ''}
              </>
            ),
          },
          { header: 'Currency', cell: (s) => s.currency ?? '—' },
          { header: 'Status', cell: (s) => <Status value={s.status} /> },
          { header: 'Period ends', cell: (s) => date(s.current_period_end) },
        ]}
      />
    </>
  );
}

/**
 * Progressive billing (docs/usage.md#billing-thresholds): the usage amount that bills early. Threshold invoices are
 * among the subscription's invoices below, each with its period ending when it billed.
 */
function BillingThreshold({ subscription, currency }: { subscription: object; currency: string | undefined }) {
  const thresholds = (subscription as { billing_thresholds?: { amount_gte: number } | null }).billing_thresholds;
  if (!thresholds) return <span className="muted">None</span>;
  const amount = currency ? money(thresholds.amount_gte, currency) : String(thresholds.amount_gte);
  return <>Usage not yet billed is invoiced at once when it reaches {amount} (a threshold invoice)</>;
}

export function SubscriptionDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const mode = currentMode();
  const subscription = useQuery({
    queryKey: [mode, 'subscription', id],
    queryFn: () => unwrap(api.GET('/v1/subscriptions/{id}', { params: { path: { id } } })),
  });
  // Its own events and its invoices' and payments' (GET /v1/events?related_object=), newest first.
  const events = useQuery({
    queryKey: [mode, 'subscription-events', id],
    queryFn: () => unwrap(api.GET('/v1/events', { params: { query: { limit: 100, related_object: id } } })),
  });
  const s = subscription.data;
  const plan = useQuery({
    queryKey: [mode, 'plan', s?.plan],
    enabled: Boolean(s?.plan),
    queryFn: () => unwrap(api.GET('/v1/plans/{id}', { params: { path: { id: s!.plan } } })),
  });
  const invoices = useQuery({
    queryKey: [mode, 'subscription-invoices', id],
    queryFn: () => unwrap(api.GET('/v1/invoices', { params: { query: { limit: 10, subscription: id } } })),
  });
  const p = plan.data;
  const currency = s?.currency ?? p?.currency;
  const perPeriod = s && p && currency ? amountAt(pricingOf(p, currency), s.quantity) : null;
  const timeline = events.data?.data ?? [];
  const ended = s !== undefined && (s.status === 'canceled' || s.status === 'expired');
  return (
    <>
      <PageTitle>Subscription {id}</PageTitle>
      <ErrorNote error={subscription.error} />
      {s ? (
        <section className="card">
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Status value={s.status} />
              {s.cancel_at_period_end ? ' (cancels at period end)' : ''}
            </dd>
            <dt>Customer</dt>
            <dd>
              <CustomerName id={s.customer_id} />
            </dd>
            <dt>Plan</dt>
            <dd>
              {p ? `${p.name}: ${describePlan(p).price}, ${describePlan(p).billing} ` : null}
              <code>{s.plan}</code>
              {s.pending_plan && s.pending_plan !== s.plan ? ` → ${s.pending_plan} at the renewal` : ''}
            </dd>
            <dt>Quantity</dt>
            <dd>
              {s.quantity}
              {s.pending_quantity !== null && s.pending_quantity !== undefined
                ? ` → ${s.pending_quantity} at the renewal (pending quantity)`
                : ''}
            </dd>
            <dt>Currency</dt>
            <dd>{currency ?? '—'}</dd>
            <dt>Each period</dt>
            <dd>{perPeriod !== null && currency ? money(perPeriod, currency) : '—'}</dd>
            <dt>Items</dt>
            <dd>
              <ul className="plain">
                {s.items.map((item) => (
                  <li key={item.id}>
                    <PlanName id={item.plan} /> × {item.quantity} <span className="muted">({item.id})</span>
                  </li>
                ))}
              </ul>
            </dd>
            <dt>Current period</dt>
            <dd>
              {date(s.current_period_start)} – {date(s.current_period_end)}
            </dd>
            <dt>Billing threshold</dt>
            <dd>
              <BillingThreshold subscription={s} currency={currency} />
            </dd>
          </dl>
          {ended ? (
            <p className="muted">This subscription has ended: nothing about it can change.</p>
          ) : (
            <div className="actions">
              {/* Only an active subscription pauses and only a paused one resumes (the API answers 409 otherwise). */}
              {s.status === 'paused' ? (
                <ActionButton
                  label="Resume"
                  action={() => unwrap(api.POST('/v1/subscriptions/{id}/resume', { params: { path: { id } } }))}
                />
              ) : null}
              {s.status === 'active' ? (
                <ActionButton
                  label="Pause"
                  action={() =>
                    unwrap(api.POST('/v1/subscriptions/{id}/pause', { params: { path: { id } }, body: {} }))
                  }
                />
              ) : null}
              {s.cancel_at_period_end ? (
                <ActionButton
                  label="Keep subscription (undo cancel)"
                  action={() => unwrap(api.POST('/v1/subscriptions/{id}/undo_cancel', { params: { path: { id } } }))}
                />
              ) : (
                <ActionButton
                  label="Cancel at period end"
                  action={() =>
                    unwrap(
                      api.POST('/v1/subscriptions/{id}/cancel', {
                        params: { path: { id } },
                        body: { at_period_end: true },
                      }),
                    )
                  }
                />
              )}
              <ActionButton
                label="Cancel now"
                className="danger"
                confirm="Cancel this subscription now?"
                action={() =>
                  unwrap(
                    api.POST('/v1/subscriptions/{id}/cancel', {
                      params: { path: { id } },
                      body: { at_period_end: false },
                    }),
                  )
                }
              />
            </div>
          )}
        </section>
      ) : null}
      {s && !ended ? <QuantityChange key={`${s.quantity}:${s.pending_quantity}`} s={s} plan={p} /> : null}
      {/* Several items change through their own page (the API answers 409 to a plan change here). */}
      {s && !ended && s.items.length <= 1 ? (
        <ActionForm
          title="Change plan"
          submit="Change plan"
          action={(v) =>
            unwrap(api.POST('/v1/subscriptions/{id}/update', { params: { path: { id } }, body: { plan: v.plan! } }))
          }
        >
          <PlanPicker name="plan" label="New plan" required exclude={s.plan} />
        </ActionForm>
      ) : null}
      {s && s.status !== 'canceled' && s.status !== 'expired' ? (
        <DiscountCard
          path={`/v1/subscriptions/${id}/discount`}
          known={'discount' in s ? ((s as { discount?: Discount | null }).discount ?? null) : undefined}
          about="The subscription's own discount applies to its invoices from the next one on, before the customer's."
        />
      ) : null}
      {s && s.status !== 'canceled' && s.status !== 'expired' ? <SubscriptionTaxRatesCard subscriptionId={id} /> : null}
      <section className="card" aria-label="Invoices of this subscription">
        <h2>Invoices</h2>
        <ErrorNote error={invoices.error} />
        {(invoices.data?.data ?? []).length === 0 ? <p>No invoices yet.</p> : null}
        {(invoices.data?.data ?? []).map((invoice) => (
          <div key={invoice.id} className="invoice-block">
            <h3>
              <Link to="/invoices/$id" params={{ id: invoice.id }}>
                {invoice.number ?? invoice.id}
              </Link>{' '}
              <Status value={invoice.status} /> {money(invoice.total, invoice.currency)} · {date(invoice.created_at)}
            </h3>
            <InvoiceLines invoice={invoice} />
          </div>
        ))}
      </section>
      <section className="card" aria-label="Timeline">
        <h2>Timeline</h2>
        <ol className="timeline">
          {timeline.map((e) => (
            <li key={e.id}>
              <time dateTime={e.created_at}>{date(e.created_at)}</time> <strong>{e.type}</strong>
              {e.data.object.id !== id ? <span className="muted"> ({String(e.data.object.id)})</span> : null}
            </li>
          ))}
          {events.isSuccess && timeline.length === 0 ? <li>No events yet.</li> : null}
        </ol>
      </section>
    </>
  );
}
