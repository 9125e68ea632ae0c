/**
 * Tax rates (docs/discounts-and-taxes.md#taxes): create, list, deactivate (and activate again). A
 * rate's percentage and inclusive never change: a new rate is made instead.
 */
import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';

import { call, currentMode, date } from '../api.ts';
import { type ListOf, type TaxRate, taxTypes } from '../billing-types.ts';
import { ActionButton, ActionForm, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

/** "VAT 19% (exclusive), DE". */
export function taxRateText(
  rate: Pick<TaxRate, 'display_name' | 'percentage' | 'inclusive'> & { country?: string | null; state?: string | null },
): string {
  const where = [rate.country, rate.state].filter(Boolean).join('-');
  return `${rate.display_name} ${rate.percentage}% (${rate.inclusive ? 'inclusive' : 'exclusive'})${where ? `, ${where}` : ''}`;
}

interface TaxSettings {
  object: 'tax_settings';
  default_tax_rates: string[];
}

export function TaxRates() {
  const id = useId();
  const settings = useQuery({
    queryKey: [currentMode(), 'tax-settings'],
    queryFn: () => call<TaxSettings>('GET', '/v1/settings/tax'),
  });
  const defaults = settings.data?.default_tax_rates ?? [];
  const setDefaults = (next: string[]) => call('PATCH', '/v1/settings/tax', { body: { default_tax_rates: next } });
  return (
    <>
      <PageTitle>Tax rates</PageTitle>
      <ActionForm
        title="New tax rate"
        submit="Create tax rate"
        action={(v) => {
          const body: Record<string, unknown> = {
            display_name: v.display_name,
            percentage: v.percentage,
            inclusive: v.inclusive === 'inclusive',
          };
          if (v.description) body.description = v.description;
          if (v.country) body.country = v.country;
          if (v.state) body.state = v.state;
          if (v.jurisdiction) body.jurisdiction = v.jurisdiction;
          if (v.tax_type) body.tax_type = v.tax_type;
          return call('POST', '/v1/tax_rates', { body });
        }}
      >
        <Field label="Display name" name="display_name" required placeholder="VAT" />
        <Field label="Percentage" name="percentage" required placeholder="19" />
        <div className="field">
          <label htmlFor={`${id}-inclusive`}>Prices</label>
          <select id={`${id}-inclusive`} name="inclusive" defaultValue="exclusive">
            <option value="exclusive">Exclusive (tax added on top)</option>
            <option value="inclusive">Inclusive (tax included in prices)</option>
          </select>
        </div>
        <Field label="Country" name="country" placeholder="DE" />
        <Field label="State" name="state" placeholder="CA" />
        <Field label="Jurisdiction" name="jurisdiction" placeholder="DE" />
        <div className="field">
          <label htmlFor={`${id}-type`}>Tax type</label>
          <select id={`${id}-type`} name="tax_type" defaultValue="">
            <option value="">—</option>
            {taxTypes.map((type) => (
              <option key={type} value={type}>
                {type.replaceAll('_', ' ')}
              </option>
            ))}
          </select>
        </div>
        <Field label="Description (internal)" name="description" />
      </ActionForm>
      <p className="muted">
        Account defaults apply to invoice lines that have no rates of their own (nor their subscription's), when the
        rate's country and state match the customer's address (a rate without a country matches every customer).
      </p>
      <PagedTable
        label="Tax rates"
        queryKey={['tax-rates']}
        empty="No tax rates yet."
        fetchPage={(cursor) => call<ListOf<TaxRate>>('GET', '/v1/tax_rates', { query: { limit: 20, ...cursor } })}
        columns={[
          { header: 'Name', cell: (r: TaxRate) => r.display_name },
          { header: 'Rate', cell: (r) => `${r.percentage}% ${r.inclusive ? 'inclusive' : 'exclusive'}` },
          { header: 'Where', cell: (r) => [r.country, r.state].filter(Boolean).join('-') || 'anywhere' },
          { header: 'Type', cell: (r) => r.tax_type?.replaceAll('_', ' ') ?? '—' },
          { header: 'ID', cell: (r) => <code>{r.id}</code> },
          { header: 'Created', cell: (r) => date(r.created_at) },
          { header: 'Status', cell: (r) => <Status value={r.active ? 'active' : 'inactive'} /> },
          { header: 'Account default', cell: (r) => (defaults.includes(r.id) ? 'yes' : 'no') },
          {
            header: 'Actions',
            cell: (r) => (
              <div className="actions">
                {r.active ? (
                  <ActionButton
                    label={`Deactivate ${taxRateText(r)}`}
                    action={() => call('PATCH', `/v1/tax_rates/${r.id}`, { body: { active: false } })}
                  />
                ) : (
                  <ActionButton
                    label={`Activate ${taxRateText(r)}`}
                    action={() => call('PATCH', `/v1/tax_rates/${r.id}`, { body: { active: true } })}
                  />
                )}
                {defaults.includes(r.id) ? (
                  <ActionButton
                    label={`Remove default ${taxRateText(r)}`}
                    action={() => setDefaults(defaults.filter((d) => d !== r.id))}
                  />
                ) : r.active ? (
                  <ActionButton
                    label={`Make default ${taxRateText(r)}`}
                    action={() => setDefaults([...defaults, r.id])}
                  />
                ) : null}
              </div>
            ),
          },
        ]}
      />
    </>
  );
}

interface SubscriptionTaxRates {
  object: 'subscription_tax_rates';
  subscription: string;
  default_tax_rates: string[];
  items: { id: string; tax_rates: string[] }[];
}

/** A subscription's default tax rates (its lines without rates of their own): the active rates to tick; none ticked: the account's defaults apply. */
export function SubscriptionTaxRatesCard({ subscriptionId }: { subscriptionId: string }) {
  const mode = currentMode();
  const path = `/v1/subscriptions/${subscriptionId}/tax_rates`;
  const current = useQuery({
    queryKey: [mode, 'subscription-tax-rates', subscriptionId],
    queryFn: () => call<SubscriptionTaxRates>('GET', path),
  });
  const rates = useQuery({
    queryKey: [mode, 'tax-rates', 'active'],
    queryFn: () => call<ListOf<TaxRate>>('GET', '/v1/tax_rates', { query: { limit: 100, active: 'true' } }),
  });
  const chosen = current.data?.default_tax_rates ?? [];
  const choices = [...(rates.data?.data ?? [])];
  if (!current.data || !rates.data) return null;
  return (
    <ActionForm
      key={chosen.join(',')}
      title="Tax rates of this subscription"
      submit="Save tax rates"
      action={(v) =>
        call('POST', path, {
          body: { default_tax_rates: choices.map((rate) => rate.id).filter((rateId) => v[`rate-${rateId}`] === 'on') },
        })
      }
    >
      <p className="muted">
        Applied to its invoices from the next one on, to lines without rates of their own; none ticked: the account's
        default rates apply.
      </p>
      {choices.length === 0 ? <p>No active tax rates.</p> : null}
      {choices.map((rate) => (
        <div className="field checkbox" key={rate.id}>
          <input
            id={`sub-rate-${rate.id}`}
            type="checkbox"
            name={`rate-${rate.id}`}
            defaultChecked={chosen.includes(rate.id)}
          />
          <label htmlFor={`sub-rate-${rate.id}`}>{taxRateText(rate)}</label>
        </div>
      ))}
    </ActionForm>
  );
}
