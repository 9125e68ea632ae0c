/**
 * Coupons and promotion codes (docs/discounts-and-taxes.md#discounts): create, list, and take out
 * of use (a coupon is deleted: no new redemptions, discounts already made go on; a promotion code is
 * deactivated, and can be activated again).
 */
import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';

import { call, currentMode, date, money, toMinor } from '../api.ts';
import { type Coupon, couponDurations, type ListOf, type PromotionCode } from '../billing-types.ts';
import { CustomerPicker } from '../pickers.tsx';
import { ActionButton, ActionForm, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

/** A coupon's terms in words: "20% off for 3 months", "$5.00 off once", "10% off forever". */
export function couponText(coupon: Coupon): string {
  const off =
    coupon.percent_off !== null
      ? `${coupon.percent_off}% off`
      : `${money(coupon.amount_off ?? 0, coupon.currency ?? 'USD')} off`;
  const duration =
    coupon.duration === 'repeating'
      ? `for ${coupon.duration_in_months} month${coupon.duration_in_months === 1 ? '' : 's'}`
      : coupon.duration;
  return `${off} ${duration}`;
}

/** The `coupon` field of a form: the coupons that can still be redeemed, by name and terms (the promotion code and discount forms). */
export function CouponSelect({ id }: { id: string }) {
  const coupons = useQuery({
    queryKey: [currentMode(), 'coupons', 'all'],
    queryFn: () => call<ListOf<Coupon>>('GET', '/v1/coupons', { query: { limit: 100 } }),
  });
  return (
    <div className="field">
      <label htmlFor={id}>Coupon</label>
      <select id={id} name="coupon" required>
        {(coupons.data?.data ?? [])
          .filter((coupon) => coupon.valid)
          .map((coupon) => (
            <option key={coupon.id} value={coupon.id}>
              {coupon.name ?? coupon.id} ({couponText(coupon)})
            </option>
          ))}
      </select>
    </div>
  );
}

function CouponForm() {
  const [kind, setKind] = useState<'percent' | 'amount'>('percent');
  const [duration, setDuration] = useState<(typeof couponDurations)[number]>('once');
  const id = useId();
  return (
    <ActionForm
      title="New coupon"
      submit="Create coupon"
      action={(v) => {
        const body: Record<string, unknown> = { duration };
        if (v.id) body.id = v.id;
        if (v.name) body.name = v.name;
        if (kind === 'percent') body.percent_off = Number(v.percent_off);
        else {
          const currency = (v.currency || 'USD').toUpperCase();
          const minor = toMinor(v.amount_off ?? '', currency);
          if (minor === null) throw new Error(`amount_off: must be an amount in ${currency} like 5.00.`);
          body.amount_off = minor;
          body.currency = currency;
        }
        if (duration === 'repeating') body.duration_in_months = Number(v.duration_in_months);
        if (v.max_redemptions) body.max_redemptions = Number(v.max_redemptions);
        if (v.redeem_by) body.redeem_by = new Date(v.redeem_by).toISOString();
        return call('POST', '/v1/coupons', { body });
      }}
      done={() => {
        setKind('percent');
        setDuration('once');
      }}
    >
      <Field label="Coupon ID (optional)" name="id" placeholder="LAUNCH20" />
      <Field label="Name" name="name" placeholder="Launch: 20% off" />
      <div className="field">
        <label htmlFor={`${id}-kind`}>Discount</label>
        <select id={`${id}-kind`} value={kind} onChange={(e) => setKind(e.target.value as typeof kind)}>
          <option value="percent">Percent off</option>
          <option value="amount">Amount off</option>
        </select>
      </div>
      {kind === 'percent' ? (
        <Field label="Percent off" name="percent_off" type="number" required placeholder="20" />
      ) : (
        <>
          <Field label="Amount off" name="amount_off" required placeholder="5.00" />
          <Field label="Currency" name="currency" defaultValue="USD" />
        </>
      )}
      <div className="field">
        <label htmlFor={`${id}-duration`}>Duration</label>
        <select id={`${id}-duration`} value={duration} onChange={(e) => setDuration(e.target.value as typeof duration)}>
          <option value="once">Once (the first invoice)</option>
          <option value="repeating">Repeating (months)</option>
          <option value="forever">Forever</option>
        </select>
      </div>
      {duration === 'repeating' ? (
        <Field label="Months" name="duration_in_months" type="number" required defaultValue={3} />
      ) : null}
      <Field label="Max redemptions" name="max_redemptions" type="number" />
      <Field label="Redeem by" name="redeem_by" type="datetime-local" />
    </ActionForm>
  );
}

function PromotionCodeForm() {
  const id = useId();
  return (
    <ActionForm
      title="New promotion code"
      submit="Create promotion code"
      action={(v) => {
        const body: Record<string, unknown> = { coupon: v.coupon };
        if (v.code) body.code = v.code;
        if (v.max_redemptions) body.max_redemptions = Number(v.max_redemptions);
        if (v.expires_at) body.expires_at = new Date(v.expires_at).toISOString();
        if (v.customer) body.customer = v.customer;
        const restrictions: Record<string, unknown> = {};
        if (v.first_time_transaction === 'on') restrictions.first_time_transaction = true;
        if (v.minimum_amount) {
          const currency = (v.minimum_amount_currency || 'USD').toUpperCase();
          const minor = toMinor(v.minimum_amount, currency);
          if (minor === null)
            throw new Error(`restrictions.minimum_amount: must be an amount in ${currency} like 50.00.`);
          restrictions.minimum_amount = minor;
          restrictions.minimum_amount_currency = currency;
        }
        if (Object.keys(restrictions).length) body.restrictions = restrictions;
        return call('POST', '/v1/promotion_codes', { body });
      }}
    >
      <CouponSelect id={`${id}-coupon`} />
      <Field label="Code (optional)" name="code" placeholder="SPRING20" />
      <Field label="Max redemptions" name="max_redemptions" type="number" />
      <Field label="Expires at" name="expires_at" type="datetime-local" />
      <CustomerPicker name="customer" label="Only for customer" anyLabel="Any customer" />
      <Field label="Minimum first invoice" name="minimum_amount" placeholder="50.00" />
      <Field label="Minimum's currency" name="minimum_amount_currency" defaultValue="USD" />
      <div className="field checkbox">
        <input id={`${id}-first`} type="checkbox" name="first_time_transaction" />
        <label htmlFor={`${id}-first`}>First purchase only (a customer who never paid)</label>
      </div>
    </ActionForm>
  );
}

export function Coupons() {
  return (
    <>
      <PageTitle>Coupons</PageTitle>
      <CouponForm />
      <PagedTable
        label="Coupons"
        queryKey={['coupons']}
        empty="No coupons yet."
        fetchPage={(cursor) => call<ListOf<Coupon>>('GET', '/v1/coupons', { query: { limit: 20, ...cursor } })}
        columns={[
          { header: 'ID', cell: (c: Coupon) => <code>{c.id}</code> },
          { header: 'Name', cell: (c) => c.name ?? '—' },
          { header: 'Terms', cell: (c) => couponText(c) },
          {
            header: 'Redeemed',
            cell: (c) => `${c.times_redeemed}${c.max_redemptions !== null ? ` of ${c.max_redemptions}` : ''}`,
          },
          { header: 'Redeem by', cell: (c) => date(c.redeem_by) },
          { header: 'Status', cell: (c) => <Status value={c.valid ? 'valid' : 'expired'} /> },
          {
            header: 'Actions',
            cell: (c) => (
              <ActionButton
                label={`Delete ${c.id}`}
                className="danger"
                confirm={`Delete coupon ${c.id}? It can no longer be redeemed (nor its promotion codes); discounts already made from it go on until they end.`}
                action={() => call('DELETE', `/v1/coupons/${encodeURIComponent(c.id)}`)}
              />
            ),
          },
        ]}
      />
      <h2>Promotion codes</h2>
      <PromotionCodeForm />
      <PagedTable
        label="Promotion codes"
        queryKey={['promotion-codes']}
        empty="No promotion codes yet."
        fetchPage={(cursor) =>
          call<ListOf<PromotionCode>>('GET', '/v1/promotion_codes', { query: { limit: 20, ...cursor } })
        }
        columns={[
          { header: 'Code', cell: (p: PromotionCode) => <code>{p.code}</code> },
          { header: 'Coupon', cell: (p) => `${p.coupon.name ?? p.coupon.id}: ${couponText(p.coupon)}` },
          {
            header: 'Restrictions',
            cell: (p) =>
              [
                p.restrictions.first_time_transaction ? 'first purchase only' : null,
                p.restrictions.minimum_amount !== null
                  ? `minimum ${money(p.restrictions.minimum_amount, p.restrictions.minimum_amount_currency ?? 'USD')}`
                  : null,
                p.customer ? `only ${p.customer}` : null,
                p.expires_at ? `expires ${date(p.expires_at)}` : null,
              ]
                .filter(Boolean)
                .join('; ') || 'none',
          },
          {
            header: 'Redeemed',
            cell: (p) => `${p.times_redeemed}${p.max_redemptions !== null ? ` of ${p.max_redemptions}` : ''}`,
          },
          { header: 'Status', cell: (p) => <Status value={p.active ? 'active' : 'inactive'} /> },
          {
            header: 'Actions',
            cell: (p) =>
              p.active ? (
                <ActionButton
                  label={`Deactivate ${p.code}`}
                  action={() => call('PATCH', `/v1/promotion_codes/${p.id}`, { body: { active: false } })}
                />
              ) : (
                <ActionButton
                  label={`Activate ${p.code}`}
                  action={() => call('PATCH', `/v1/promotion_codes/${p.id}`, { body: { active: true } })}
                />
              ),
          },
        ]}
      />
    </>
  );
}
