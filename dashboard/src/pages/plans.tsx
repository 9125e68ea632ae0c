import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';

import { currencyExponent } from '../../../domain/money.ts';
import { intervalText, majorToMinor, type PriceDescribed, schemeText } from '../../../domain/price-text.ts';
import { type Pricing, pricingProblems, type Tier } from '../../../domain/pricing.ts';
import { api, ApiFailure, date, type Schemas, unwrap } from '../api.ts';
import { ErrorNote, PagedTable, PageTitle } from '../ui.tsx';

type Scheme = 'per_unit' | 'package' | 'tiered';
type PlanType = 'recurring' | 'one_time';
/** A tier as typed: up_to (empty when "and above"), the unit amount and flat amount in major units. */
interface TierRow {
  key: number;
  upTo: string;
  above: boolean;
  unit: string;
  flat: string;
}
/** Another currency's price: an amount (per unit, package) or each tier's amounts (tiered, same bounds). */
interface OptionRow {
  key: number;
  currency: string;
  amount: string;
  tiers: { unit: string; flat: string }[];
}

const currencies = ['USD', 'EUR', 'GBP', 'JPY', 'CAD', 'AUD', 'CHF'];
let nextKey = 1;
const newTier = (above = false): TierRow => ({ key: nextKey++, upTo: '', above, unit: '', flat: '' });

/** A plan as the list and the subscription pages describe it. */
export function describePlan(plan: Schemas['Plan']): { price: string; billing: string } {
  const described: PriceDescribed = { ...plan, tiers: plan.tiers as Tier[] | null };
  return { price: schemeText(described), billing: intervalText(described) };
}

/** The amount fields of a tier as the API takes them, or the problems with what was typed (named as the API names its fields). */
function tierAmounts(at: string, unit: string, flat: string, exponent: number, problems: string[]): Partial<Tier> {
  const out: Partial<Tier> = {};
  const parsedUnit = majorToMinor(unit || '0', exponent);
  if (!parsedUnit) problems.push(`${at}.unit_amount: must be an amount like 8.00 (or 0.125 of a cent as 0.00125).`);
  else if ('minor' in parsedUnit) out.unit_amount = parsedUnit.minor;
  else out.unit_amount_decimal = parsedUnit.decimal;
  if (flat.trim()) {
    const parsedFlat = majorToMinor(flat, exponent);
    if (!parsedFlat || !('minor' in parsedFlat))
      problems.push(`${at}.flat_amount: must be an amount in whole minor units, like 5.00.`);
    else out.flat_amount = parsedFlat.minor;
  }
  return out;
}

/**
 * The create body for what the form holds, checked here with the engine's own rules
 * (domain/pricing.ts pricingProblems: the API's messages). Problems come back as one
 * message, as the API's 400 would say them; what only the API knows it answers itself.
 */
function planBody(form: {
  name: string;
  type: PlanType;
  scheme: Scheme;
  amount: string;
  currency: string;
  interval: string;
  intervalCount: string;
  trial: string;
  tiersMode: 'graduated' | 'volume';
  tiers: TierRow[];
  packageSize: string;
  packageRound: 'up' | 'down';
  options: OptionRow[];
}) {
  const problems: string[] = [];
  const exponent = currencyExponent(form.currency);
  const body: Record<string, unknown> = {
    name: form.name,
    currency: form.currency,
    type: form.type,
    pricing_scheme: form.scheme,
  };
  if (form.type === 'recurring') {
    body.interval = form.interval;
    if (form.intervalCount.trim() && form.intervalCount !== '1') body.interval_count = Number(form.intervalCount);
    if (form.trial.trim()) body.trial_period_days = Number(form.trial);
  }
  let pricing: Pricing;
  const tiersOf = (amounts: { unit: string; flat: string }[], prefix: string, exp: number): Tier[] =>
    form.tiers.map((row, index) => {
      const at = `${prefix}tiers[${index}]`;
      let upTo: number | 'inf' = 'inf';
      if (!row.above) {
        upTo = Number(row.upTo);
        if (!row.upTo.trim() || !Number.isSafeInteger(upTo)) {
          // Left to pricingProblems: it names the field and what it must be.
          upTo = row.upTo.trim() ? Number.NaN : 0;
        }
      }
      return {
        up_to: upTo,
        ...tierAmounts(at, amounts[index]?.unit ?? '', amounts[index]?.flat ?? '', exp, problems),
      } as Tier;
    });
  if (form.scheme === 'tiered') {
    const tiers = tiersOf(form.tiers, '', exponent);
    body.tiers_mode = form.tiersMode;
    body.tiers = tiers;
    pricing = { scheme: 'tiered', tiers_mode: form.tiersMode, tiers };
  } else {
    const parsed = majorToMinor(form.amount, exponent);
    if (!parsed || !('minor' in parsed)) problems.push(`amount: must be an amount in whole minor units, like 20.00.`);
    const amount = parsed && 'minor' in parsed ? parsed.minor : 0;
    body.amount = amount;
    if (form.scheme === 'package') {
      body.package_size = Number(form.packageSize);
      body.package_round = form.packageRound;
      pricing = { scheme: 'package', amount, package_size: Number(form.packageSize), round: form.packageRound };
    } else pricing = { scheme: 'per_unit', amount };
  }
  problems.push(...pricingProblems(pricing));
  if (form.options.length) {
    const options: Record<string, unknown> = {};
    for (const option of form.options) {
      const at = `currency_options.${option.currency}`;
      const exp = currencyExponent(option.currency);
      if (option.currency === form.currency)
        problems.push(`${at}: the plan's own currency is priced by the plan itself.`);
      else if (options[option.currency]) problems.push(`${at}: ${option.currency} is given twice.`);
      if (form.scheme === 'tiered') {
        const tiers = tiersOf(option.tiers, `${at}.`, exp);
        problems.push(
          ...pricingProblems({ scheme: 'tiered', tiers_mode: form.tiersMode, tiers }).map((p) => `${at}.${p}`),
        );
        options[option.currency] = { tiers };
      } else {
        const parsed = majorToMinor(option.amount, exp);
        if (!parsed || !('minor' in parsed) || parsed.minor < 1)
          problems.push(`${at}.amount: must be an amount above zero in whole minor units.`);
        options[option.currency] = { amount: parsed && 'minor' in parsed ? parsed.minor : 0 };
      }
    }
    body.currency_options = options;
  }
  return { body, problems: [...new Set(problems)] };
}

function TierEditor(props: { tiers: TierRow[]; currency: string; onChange: (tiers: TierRow[]) => void }) {
  const { tiers } = props;
  const set = (index: number, change: Partial<TierRow>) =>
    props.onChange(tiers.map((t, i) => (i === index ? { ...t, ...change } : t)));
  let from = 1;
  return (
    <div className="tier-editor" role="group" aria-label="Tiers">
      {tiers.map((tier, index) => {
        const first = from;
        if (!tier.above && Number(tier.upTo) >= first) from = Number(tier.upTo) + 1;
        const id = `tier-${tier.key}`;
        return (
          <fieldset key={tier.key} className="tier">
            <legend>
              Tier {index + 1}
              <span className="muted"> (from unit {first})</span>
            </legend>
            <div className="field">
              <label htmlFor={`${id}-up`}>Up to</label>
              <input
                id={`${id}-up`}
                type="number"
                min={1}
                step={1}
                inputMode="numeric"
                value={tier.above ? '' : tier.upTo}
                disabled={tier.above}
                onChange={(e) => set(index, { upTo: e.target.value })}
              />
            </div>
            <div className="field checkbox-inline">
              <input
                id={`${id}-above`}
                type="checkbox"
                checked={tier.above}
                onChange={(e) => set(index, { above: e.target.checked })}
              />
              <label htmlFor={`${id}-above`}>and above</label>
            </div>
            <div className="field">
              <label htmlFor={`${id}-unit`}>Unit amount ({props.currency})</label>
              <input
                id={`${id}-unit`}
                inputMode="decimal"
                value={tier.unit}
                placeholder="8.00"
                onChange={(e) => set(index, { unit: e.target.value })}
              />
            </div>
            <div className="field">
              <label htmlFor={`${id}-flat`}>Flat amount ({props.currency})</label>
              <input
                id={`${id}-flat`}
                inputMode="decimal"
                value={tier.flat}
                placeholder="optional"
                onChange={(e) => set(index, { flat: e.target.value })}
              />
            </div>
            <button
              type="button"
              className="link-button"
              disabled={tiers.length === 1}
              onClick={() => props.onChange(tiers.filter((_, i) => i !== index))}
            >
              Remove tier {index + 1}
            </button>
          </fieldset>
        );
      })}
      <button
        type="button"
        onClick={() => {
          // The new tier goes before the "and above" one, which stays last.
          const last = tiers[tiers.length - 1];
          props.onChange(last?.above ? [...tiers.slice(0, -1), newTier(), last] : [...tiers, newTier()]);
        }}
      >
        Add tier
      </button>
    </div>
  );
}

function PlanForm() {
  const client = useQueryClient();
  const id = useId();
  const [name, setName] = useState('');
  const [type, setType] = useState<PlanType>('recurring');
  const [scheme, setScheme] = useState<Scheme>('per_unit');
  const [amount, setAmount] = useState('');
  const [currency, setCurrency] = useState('USD');
  const [interval, setInterval] = useState('month');
  const [intervalCount, setIntervalCount] = useState('1');
  const [trial, setTrial] = useState('');
  const [tiersMode, setTiersMode] = useState<'graduated' | 'volume'>('graduated');
  const [tiers, setTiers] = useState<TierRow[]>(() => [newTier(), newTier(true)]);
  const [packageSize, setPackageSize] = useState('');
  const [packageRound, setPackageRound] = useState<'up' | 'down'>('up');
  const [options, setOptions] = useState<OptionRow[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<string | null>(null);

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setError(null);
    setCreated(null);
    const { body, problems } = planBody({
      name,
      type,
      scheme,
      amount,
      currency,
      interval,
      intervalCount,
      trial,
      tiersMode,
      tiers,
      packageSize,
      packageRound,
      options,
    });
    if (problems.length) {
      setError(new ApiFailure(400, 'invalid_request', problems.join(' ')));
      return;
    }
    setBusy(true);
    try {
      const plan = await unwrap(api.POST('/v1/plans', { body: body as never }));
      setCreated(`Created ${plan.name}: ${describePlan(plan).price}, ${describePlan(plan).billing}.`);
      setName('');
      setAmount('');
      setTiers([newTier(), newTier(true)]);
      setOptions([]);
      await client.invalidateQueries();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }
  const f = (suffix: string) => `${id}-${suffix}`;
  return (
    <form className="card form plan-form" onSubmit={onSubmit} aria-label="New plan" noValidate>
      <h2>New plan</h2>
      <div className="field">
        <label htmlFor={f('name')}>Name</label>
        <input id={f('name')} name="name" required value={name} onChange={(e) => setName(e.target.value)} />
      </div>
      <div className="field">
        <label htmlFor={f('type')}>Type</label>
        <select id={f('type')} value={type} onChange={(e) => setType(e.target.value as PlanType)}>
          <option value="recurring">Recurring</option>
          <option value="one_time">One-time (setup fee)</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor={f('scheme')}>Pricing scheme</label>
        <select id={f('scheme')} value={scheme} onChange={(e) => setScheme(e.target.value as Scheme)}>
          <option value="per_unit">Per unit</option>
          <option value="package">Package</option>
          <option value="tiered">Tiered</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor={f('currency')}>Currency</label>
        <select id={f('currency')} value={currency} onChange={(e) => setCurrency(e.target.value)}>
          {currencies.map((c) => (
            <option key={c}>{c}</option>
          ))}
        </select>
      </div>
      {scheme !== 'tiered' ? (
        <div className="field">
          <label htmlFor={f('amount')}>{scheme === 'package' ? 'Price per package' : 'Price'}</label>
          <input
            id={f('amount')}
            name="amount"
            inputMode="decimal"
            required
            placeholder="20.00"
            value={amount}
            onChange={(e) => setAmount(e.target.value)}
          />
        </div>
      ) : null}
      {scheme === 'package' ? (
        <>
          <div className="field">
            <label htmlFor={f('size')}>Package size (units)</label>
            <input
              id={f('size')}
              type="number"
              min={1}
              step={1}
              value={packageSize}
              onChange={(e) => setPackageSize(e.target.value)}
              placeholder="100"
            />
          </div>
          <div className="field">
            <label htmlFor={f('round')}>Rounding</label>
            <select
              id={f('round')}
              value={packageRound}
              onChange={(e) => setPackageRound(e.target.value as 'up' | 'down')}
            >
              <option value="up">up (a started package is paid)</option>
              <option value="down">down</option>
            </select>
          </div>
        </>
      ) : null}
      {type === 'recurring' ? (
        <>
          <div className="field">
            <label htmlFor={f('interval')}>Interval</label>
            <select id={f('interval')} value={interval} onChange={(e) => setInterval(e.target.value)}>
              {['month', 'year', 'week', 'day'].map((i) => (
                <option key={i}>{i}</option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={f('count')}>Every (intervals)</label>
            <input
              id={f('count')}
              type="number"
              min={1}
              step={1}
              value={intervalCount}
              onChange={(e) => setIntervalCount(e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor={f('trial')}>Trial days</label>
            <input id={f('trial')} type="number" min={0} value={trial} onChange={(e) => setTrial(e.target.value)} />
          </div>
        </>
      ) : (
        <p className="muted">
          A one-time plan is charged once, on a subscription&apos;s first invoice: it has no interval and no trial.
        </p>
      )}
      {scheme === 'tiered' ? (
        <>
          <div className="field">
            <label htmlFor={f('mode')}>Tiers mode</label>
            <select
              id={f('mode')}
              value={tiersMode}
              onChange={(e) => setTiersMode(e.target.value as 'graduated' | 'volume')}
            >
              <option value="graduated">Graduated</option>
              <option value="volume">Volume</option>
            </select>
          </div>
          <p className="muted">
            {tiersMode === 'graduated'
              ? 'Graduated: each unit is priced by the tier it falls in, plus the flat amount of every tier reached.'
              : 'Volume: every unit is priced by the one tier the whole quantity falls in, plus its flat amount.'}
          </p>
          <TierEditor tiers={tiers} currency={currency} onChange={setTiers} />
        </>
      ) : null}
      <fieldset className="currency-options">
        <legend>Other currencies</legend>
        {options.map((option, index) => {
          const set = (change: Partial<OptionRow>) =>
            setOptions(options.map((o, i) => (i === index ? { ...o, ...change } : o)));
          const oid = `${id}-opt-${option.key}`;
          return (
            <div className="option-row" key={option.key} role="group" aria-label={`Price in ${option.currency}`}>
              <div className="field">
                <label htmlFor={`${oid}-cur`}>Currency {index + 2}</label>
                <select id={`${oid}-cur`} value={option.currency} onChange={(e) => set({ currency: e.target.value })}>
                  {currencies.map((c) => (
                    <option key={c}>{c}</option>
                  ))}
                </select>
              </div>
              {scheme === 'tiered' ? (
                tiers.map((tier, t) => (
                  <div className="field" key={tier.key}>
                    <label htmlFor={`${oid}-t${t}`}>
                      Tier {t + 1} unit amount ({option.currency})
                    </label>
                    <input
                      id={`${oid}-t${t}`}
                      inputMode="decimal"
                      value={option.tiers[t]?.unit ?? ''}
                      onChange={(e) =>
                        set({
                          tiers: tiers.map((_, k) =>
                            k === t
                              ? { unit: e.target.value, flat: option.tiers[k]?.flat ?? '' }
                              : (option.tiers[k] ?? { unit: '', flat: '' }),
                          ),
                        })
                      }
                    />
                  </div>
                ))
              ) : (
                <div className="field">
                  <label htmlFor={`${oid}-amount`}>Amount in {option.currency}</label>
                  <input
                    id={`${oid}-amount`}
                    inputMode="decimal"
                    value={option.amount}
                    onChange={(e) => set({ amount: e.target.value })}
                  />
                </div>
              )}
              <button
                type="button"
                className="link-button"
                onClick={() => setOptions(options.filter((_, i) => i !== index))}
              >
                Remove {option.currency}
              </button>
            </div>
          );
        })}
        <button
          type="button"
          onClick={() =>
            setOptions([
              ...options,
              {
                key: nextKey++,
                currency: currencies.find((c) => c !== currency && !options.some((o) => o.currency === c)) ?? 'EUR',
                amount: '',
                tiers: [],
              },
            ])
          }
        >
          Add a currency
        </button>
      </fieldset>
      <ErrorNote error={error} />
      {created ? (
        <p role="status" className="muted">
          {created}
        </p>
      ) : null}
      <button type="submit" disabled={busy}>
        Create plan
      </button>
    </form>
  );
}

export function Plans() {
  return (
    <>
      <PageTitle>Plans</PageTitle>
      <PlanForm />
      <PagedTable
        label="Plans"
        queryKey={['plans']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/plans', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'Name', cell: (p) => p.name },
          { header: 'Price', cell: (p) => describePlan(p).price },
          { header: 'Billing', cell: (p) => describePlan(p).billing },
          {
            header: 'Other currencies',
            cell: (p) =>
              Object.keys(p.currency_options ?? {}).length
                ? Object.entries(p.currency_options)
                    .map(([code, option]) =>
                      schemeText({
                        ...p,
                        currency: code,
                        amount: option.amount,
                        tiers: (option.tiers ?? p.tiers) as Tier[] | null,
                      }),
                    )
                    .join('; ')
                : '—',
          },
          { header: 'ID', cell: (p) => <code>{p.id}</code> },
          { header: 'Created', cell: (p) => date(p.created_at) },
        ]}
      />
    </>
  );
}
