/**
 * The customer portal (/dashboard/portal#<token>): a customer's subscriptions, invoices,
 * receipts and payment method, from a signed link the account sends (emailed on request,
 * linked from dunning emails and receipts). The token stays in the URL fragment and in
 * memory: it is sent as x-portal-token, never with cookies, never stored.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import createClient from 'openapi-fetch';
import { type CSSProperties, Fragment, useState } from 'react';

import type { paths } from '../../sdk/openapi.ts';
import { date, money, type Schemas, unwrap } from './api.ts';
import { ActionButton, ErrorNote, Status } from './ui.tsx';

const token = typeof location !== 'undefined' ? decodeURIComponent(location.hash.replace(/^#/, '')) : '';
const portalApi = createClient<paths>({ baseUrl: '', credentials: 'omit', headers: { 'x-portal-token': token } });

type PortalSubscription = Schemas['CustomerPortal']['subscriptions'][number];

/** The customer's quantity change (when the account allows it): more now, prorated and charged; fewer at the renewal. */
function QuantityForm({ s }: { s: PortalSubscription }) {
  const client = useQueryClient();
  const [quantity, setQuantity] = useState(String(s.quantity));
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const wanted = Number(quantity);
  return (
    <form
      className="filters"
      aria-label="Change quantity"
      onSubmit={async (event) => {
        event.preventDefault();
        setError(null);
        setDone(null);
        try {
          const changed = await unwrap(
            portalApi.POST('/v1/portal/subscriptions/{id}/quantity', {
              params: { path: { id: s.id } },
              body: { quantity: wanted },
            }),
          );
          setDone(
            changed.pending_quantity !== null && changed.pending_quantity !== undefined
              ? `From ${date(changed.current_period_end)} you will have ${changed.pending_quantity}.`
              : `You now have ${changed.quantity}; the rest of this period was charged, prorated.`,
          );
          await client.invalidateQueries();
        } catch (failure) {
          setError(failure);
        }
      }}
    >
      <div className="field">
        <label htmlFor={`quantity-${s.id}`}>Quantity</label>
        <input
          id={`quantity-${s.id}`}
          type="number"
          min={1}
          step={1}
          required
          value={quantity}
          onChange={(e) => setQuantity(e.target.value)}
        />
      </div>
      <button type="submit">Update quantity</button>
      <p className="muted">
        More takes effect now: the rest of this period is charged today, prorated. Fewer takes effect at the next
        renewal.
      </p>
      {done ? <p role="status">{done}</p> : null}
      <ErrorNote error={error} />
    </form>
  );
}

/** A subscription's discount as GET /v1/portal shows it (typed here until sdk/openapi.ts is regenerated). */
interface PortalDiscount {
  coupon: {
    id: string;
    name: string | null;
    percent_off: number | null;
    amount_off: number | null;
    currency: string | null;
    duration: string;
    duration_in_months: number | null;
  };
  end: string | null;
}
const discountOf = (s: PortalSubscription): PortalDiscount | null =>
  (s as PortalSubscription & { discount?: PortalDiscount | null }).discount ?? null;
const promotionCodesAllowed = (portal: Schemas['CustomerPortal']): boolean =>
  Boolean((portal.permissions as { promotion_codes?: boolean }).promotion_codes);

/** "20% off until 11 Feb 2027", "$5.00 off, next invoice only", "10% off". */
function discountText(d: PortalDiscount): string {
  const off =
    d.coupon.percent_off !== null
      ? `${d.coupon.percent_off}% off`
      : `${money(d.coupon.amount_off ?? 0, d.coupon.currency ?? 'USD')} off`;
  const label = d.coupon.name ? `${d.coupon.name}: ${off}` : off;
  if (d.end) return `${label} until ${date(d.end)}`;
  return d.coupon.duration === 'once' ? `${label}, next invoice only` : label;
}

/** The customer enters a promotion code (when the account allows it): it becomes the subscription's discount. */
function PromotionCodeForm({ s }: { s: PortalSubscription }) {
  const client = useQueryClient();
  const [code, setCode] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  return (
    <form
      className="filters"
      aria-label="Promotion code"
      onSubmit={async (event) => {
        event.preventDefault();
        setError(null);
        setDone(null);
        try {
          const response = await fetch(`/v1/portal/subscriptions/${encodeURIComponent(s.id)}/promotion_code`, {
            method: 'POST',
            credentials: 'omit',
            headers: { 'content-type': 'application/json', 'x-portal-token': token },
            body: JSON.stringify({ code: code.trim() }),
          });
          const body = (await response.json()) as { discount?: PortalDiscount | null; message?: string };
          if (!response.ok) throw new Error(body.message ?? `The code was refused (${response.status}).`);
          setDone(body.discount ? `Applied: ${discountText(body.discount)}.` : 'Applied.');
          setCode('');
          await client.invalidateQueries();
        } catch (failure) {
          setError(failure);
        }
      }}
    >
      <div className="field">
        <label htmlFor={`promo-${s.id}`}>Promotion code</label>
        <input
          id={`promo-${s.id}`}
          required
          maxLength={64}
          autoComplete="off"
          value={code}
          onChange={(e) => setCode(e.target.value)}
        />
      </div>
      <button type="submit">Apply code</button>
      {done ? <p role="status">{done}</p> : null}
      <ErrorNote error={error} />
    </form>
  );
}

/** What a change to `plan` would do (nothing changes): GET /v1/portal/subscriptions/{id}/change_plan. */
const fetchPlanChangePreview = (id: string, plan: string) =>
  unwrap(portalApi.GET('/v1/portal/subscriptions/{id}/change_plan', { params: { path: { id }, query: { plan } } }));
type PlanChangePreview = Awaited<ReturnType<typeof fetchPlanChangePreview>>;
type UpcomingInvoice = NonNullable<PlanChangePreview['next_invoice']>;

/** An invoice not made yet, line by line, with its total and what will be charged. */
function InvoicePreview({ invoice, label }: { invoice: UpcomingInvoice; label: string }) {
  return (
    <section aria-label={label}>
      <h4>{label}</h4>
      <dl className="facts totals">
        {invoice.lines.map((line, index) => (
          <Fragment key={index}>
            <dt>{line.description}</dt>
            <dd>{money(line.amount, invoice.currency)}</dd>
          </Fragment>
        ))}
        {invoice.amount_due !== invoice.subtotal ? (
          <>
            <dt>Discounts, taxes and credit</dt>
            <dd>{money(invoice.amount_due - invoice.subtotal, invoice.currency)}</dd>
          </>
        ) : null}
        <dt>
          <strong>Amount due</strong>
        </dt>
        <dd>
          <strong>{money(invoice.amount_due, invoice.currency)}</strong>
        </dd>
      </dl>
    </section>
  );
}

/**
 * A plan change in two steps: the customer picks a plan and sees what it does (GET …/change_plan: the upgrade's
 * prorated invoice charged now, or nothing now for a downgrade, and the next invoice), then confirms; only the
 * confirmation changes the plan and charges.
 */
function PlanChange({
  s,
  plans,
  onDone,
}: {
  s: PortalSubscription;
  plans: Schemas['CustomerPortal']['plans'];
  onDone: (message: string) => void;
}) {
  const client = useQueryClient();
  const [plan, setPlan] = useState('');
  const [preview, setPreview] = useState<PlanChangePreview | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const path = { params: { path: { id: s.id } } };
  const chosen = plans.find((p) => p.id === plan);
  const dueNow = preview?.due_now && preview.due_now.amount_due > 0 ? preview.due_now : null;
  const reset = () => {
    setPreview(null);
    setError(null);
  };
  return (
    <form
      className="filters plan-change"
      aria-label="Change plan"
      onSubmit={async (event) => {
        event.preventDefault();
        setError(null);
        setBusy(true);
        try {
          if (!preview) {
            setPreview(await fetchPlanChangePreview(s.id, plan));
            return;
          }
          const changed = await unwrap(
            portalApi.POST('/v1/portal/subscriptions/{id}/change_plan', { ...path, body: { plan } }),
          );
          // Told by the card: once on the new plan, this form (the plans other than the current one) may be gone.
          onDone(
            changed.pending_plan === plan
              ? `You will move to ${chosen?.name ?? plan} on ${date(changed.current_period_end)}.`
              : `You are now on ${chosen?.name ?? plan}${dueNow ? `; ${money(dueNow.amount_due, dueNow.currency)} was charged` : ''}.`,
          );
          setPreview(null);
          setPlan('');
          await client.invalidateQueries();
        } catch (failure) {
          setError(failure);
        } finally {
          setBusy(false);
        }
      }}
    >
      <div className="field">
        <label htmlFor={`plan-${s.id}`}>Change plan</label>
        <select
          id={`plan-${s.id}`}
          value={plan}
          onChange={(e) => {
            setPlan(e.target.value);
            reset();
          }}
          required
        >
          <option value="">Choose a plan</option>
          {plans.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name} · {p.price}
            </option>
          ))}
        </select>
      </div>
      {preview ? (
        <div className="preview" role="region" aria-label="Plan change preview">
          <p>
            {preview.kind === 'upgrade'
              ? `${chosen?.name ?? plan} starts now. The rest of this period is prorated: the unused time on your current plan is credited.`
              : preview.kind === 'downgrade'
                ? `${chosen?.name ?? plan} starts at your next renewal, ${date(s.current_period_end)}. Nothing is charged now.`
                : `${chosen?.name ?? plan} replaces your current plan now. Nothing is charged now.`}
          </p>
          {preview.due_now ? <InvoicePreview invoice={preview.due_now} label="Charged now" /> : null}
          {preview.next_invoice ? (
            <InvoicePreview
              invoice={preview.next_invoice}
              label={`Next invoice, ${date(preview.next_invoice.created_at)}`}
            />
          ) : null}
          <div className="actions">
            <button type="submit" disabled={busy}>
              {dueNow ? `Confirm and pay ${money(dueNow.amount_due, dueNow.currency)}` : 'Confirm plan change'}
            </button>
            <button type="button" className="secondary" onClick={reset} disabled={busy}>
              Keep my current plan
            </button>
          </div>
        </div>
      ) : (
        <button type="submit" disabled={busy || !plan}>
          Review change
        </button>
      )}
      <ErrorNote error={error} />
    </form>
  );
}

type ItemUsage = Schemas['CustomerPortalItemUsage'];
/** The portal's items carry the meter's name in `usage` (the generated type intersects it with the subscription's own items, whose usage has none). */
const portalItems = (s: PortalSubscription) =>
  s.items as (Omit<PortalSubscription['items'][number], 'usage'> & { usage?: ItemUsage })[];

/** An exact decimal string with its thousands grouped ("1250.5" → "1,250.5"), never through a float. */
export function groupedDecimal(value: string): string {
  const [whole = '0', fraction] = value.split('.');
  const sign = whole.startsWith('-') ? '-' : '';
  return `${sign}${BigInt(whole.replace('-', '')).toLocaleString('en-US')}${fraction ? `.${fraction}` : ''}`;
}

const dayMonth = (value: string) => new Date(value).toLocaleDateString(undefined, { day: 'numeric', month: 'short' });

/** A metered item's usage of the current period so far: "1,250.5 API tokens (1 Nov – 1 Dec)", or none yet. */
function usageText(u: ItemUsage): string {
  const period = `${dayMonth(u.period_start)} – ${dayMonth(u.period_end)}`;
  return /^0(\.0*)?$/.test(u.quantity)
    ? `No ${u.meter_name} used yet (${period})`
    : `${groupedDecimal(u.quantity)} ${u.meter_name} (${period})`;
}

function SubscriptionCard({ s, portal }: { s: PortalSubscription; portal: Schemas['CustomerPortal'] }) {
  const ended = s.status === 'canceled' || s.status === 'expired';
  const others = portal.plans.filter((p) => p.id !== s.plan && p.currency === s.plan_details?.currency);
  const path = { params: { path: { id: s.id } } };
  // A paused subscription charges nothing until it is resumed; a past-due one is being retried.
  const charging = !ended && s.status !== 'paused';
  const [planChanged, setPlanChanged] = useState<string | null>(null);
  return (
    <article className="card" aria-label={`Subscription to ${s.plan_details?.name ?? s.plan}`}>
      <h3>
        {s.plan_details?.name ?? s.plan}{' '}
        <Status value={s.cancel_at_period_end && !ended ? 'cancels_at_period_end' : s.status} />
      </h3>
      <dl className="facts">
        <dt>Price</dt>
        <dd>{s.plan_details?.price ?? '—'}</dd>
        <dt>Quantity</dt>
        <dd>
          {s.quantity}
          {s.pending_quantity !== null && s.pending_quantity !== undefined && s.pending_quantity !== s.quantity
            ? ` (${s.pending_quantity} from ${date(s.current_period_end)})`
            : ''}
        </dd>
        {s.plan_details?.amount_at_quantity !== null && s.plan_details?.amount_at_quantity !== undefined ? (
          <>
            <dt>Each period</dt>
            <dd>{money(s.plan_details.amount_at_quantity, s.plan_details.currency)}</dd>
          </>
        ) : null}
        {portalItems(s).map((item) =>
          item.usage ? (
            <Fragment key={item.id}>
              <dt>Usage this period</dt>
              <dd>{usageText(item.usage)}</dd>
            </Fragment>
          ) : null,
        )}
        {s.billing_thresholds && !ended ? (
          <>
            <dt>Billed early at</dt>
            <dd>
              {money(s.billing_thresholds.amount_gte, s.currency ?? s.plan_details?.currency ?? 'USD')} of usage: an
              invoice is made as soon as this period's usage not yet billed reaches it
            </dd>
          </>
        ) : null}
        {discountOf(s) ? (
          <>
            <dt>Discount</dt>
            <dd>{discountText(discountOf(s)!)}</dd>
          </>
        ) : null}
        {charging ? (
          <>
            <dt>{s.cancel_at_period_end ? 'Ends on' : 'Next charge'}</dt>
            <dd>{date(s.current_period_end)}</dd>
          </>
        ) : null}
      </dl>
      {!ended ? (
        <div className="actions">
          {portal.permissions.cancellation && !s.cancel_at_period_end && s.status !== 'paused' ? (
            <ActionButton
              label="Cancel at period end"
              confirm="Cancel at the end of the current period?"
              action={() => unwrap(portalApi.POST('/v1/portal/subscriptions/{id}/cancel', path))}
            />
          ) : null}
          {portal.permissions.cancellation && s.cancel_at_period_end ? (
            <ActionButton
              label="Resume"
              action={() => unwrap(portalApi.POST('/v1/portal/subscriptions/{id}/undo_cancel', path))}
            />
          ) : null}
          {portal.permissions.resume && s.status === 'paused' ? (
            <ActionButton
              label="Resume subscription"
              action={() => unwrap(portalApi.POST('/v1/portal/subscriptions/{id}/resume', path))}
            />
          ) : null}
        </div>
      ) : null}
      {!ended && portal.permissions.quantity_changes ? <QuantityForm key={s.id} s={s} /> : null}
      {!ended && promotionCodesAllowed(portal) ? <PromotionCodeForm key={`promo-${s.id}`} s={s} /> : null}
      {!ended && portal.permissions.plan_changes && others.length > 0 ? (
        <PlanChange key={`plan-${s.id}`} s={s} plans={others} onDone={setPlanChanged} />
      ) : null}
      {planChanged ? <p role="status">{planChanged}</p> : null}
    </article>
  );
}

function InvoiceTable({ label, status }: { label: string; status?: 'paid' }) {
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const invoices = useQuery({
    queryKey: ['portal-invoices', status, cursor],
    queryFn: () =>
      unwrap(
        portalApi.GET('/v1/portal/invoices', { params: { query: { limit: 10, status, starting_after: cursor } } }),
      ),
  });
  const rows = invoices.data?.data ?? [];
  return (
    <section className="card" aria-label={label}>
      <h2>{label}</h2>
      <ErrorNote error={invoices.error} />
      {rows.length === 0 && !invoices.isLoading ? <p>None yet.</p> : null}
      <ul className="plain">
        {rows.map((i) => (
          <li key={i.id}>
            {i.number ?? i.id} · {money(i.total, i.currency)} · <Status value={i.status} /> ·{' '}
            {date(status === 'paid' ? i.paid_at : i.created_at)} ·{' '}
            <a href={i.pdf} target="_blank" rel="noopener">
              {status === 'paid' ? 'Receipt' : 'Invoice'} PDF
              <span className="visually-hidden"> {i.number ?? i.id}</span>
            </a>
          </li>
        ))}
      </ul>
      {invoices.data?.has_more ? (
        <button type="button" onClick={() => setCursor(rows[rows.length - 1]!.id)}>
          Older {label.toLowerCase()}
        </button>
      ) : null}
    </section>
  );
}

export function Portal() {
  const portal = useQuery({ queryKey: ['portal'], retry: false, queryFn: () => unwrap(portalApi.GET('/v1/portal')) });
  if (!token) {
    return (
      <main className="portal">
        <h1>Billing portal</h1>
        <p>Open the link from your email to manage your subscription.</p>
      </main>
    );
  }
  const p = portal.data;
  // The account's branding (GET /v1/portal: business name, colour, a text colour readable on it, logo), set through CSSOM (CSP allows it).
  const brand = p
    ? ({ '--brand': p.account.brand_color, '--brand-text': p.account.brand_text_color } as CSSProperties)
    : undefined;
  return (
    <div className={`${p && !p.livemode ? 'is-sandbox' : ''} ${p ? 'branded' : ''}`} style={brand}>
      {p && !p.livemode ? (
        <div className="sandbox-banner" role="status">
          Test mode: no real money moves.
        </div>
      ) : null}
      {p ? (
        <header className="portal-brand" data-brand-color={p.account.brand_color}>
          {p.account.logo_url ? <img src={p.account.logo_url} alt={`${p.account.name} logo`} /> : null}
          <span>{p.account.name}</span>
        </header>
      ) : null}
      <main className="portal">
        <h1>{p ? `${p.account.name} billing` : 'Billing portal'}</h1>
        <ErrorNote error={portal.error} />
        {p ? (
          <>
            <p>{p.customer.name ? `${p.customer.name} · ${p.customer.email}` : p.customer.email}</p>
            <section aria-label="Subscriptions">
              <h2>Subscriptions</h2>
              {p.subscriptions.length === 0 ? <p>No subscriptions.</p> : null}
              {p.subscriptions.map((s) => (
                <SubscriptionCard key={s.id} s={s} portal={p} />
              ))}
            </section>
            <section className="card" aria-label="Payment method">
              <h2>Payment method</h2>
              <p>{p.customer.payment_method_details ? p.customer.payment_method_details.label : 'None on file.'}</p>
              <a className="button" href={p.payment_method_url}>
                Update payment method
              </a>
            </section>
            <InvoiceTable label="Invoices" />
            <InvoiceTable label="Receipts" status="paid" />
          </>
        ) : null}
      </main>
    </div>
  );
}
