import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';

import { api, call, currentMode, type Schemas, unwrap } from '../api.ts';
import { useActivePlans } from '../pickers.tsx';
import { canManage, useSession } from '../session.tsx';
import { ActionForm, ErrorNote, Field, PageTitle } from '../ui.tsx';
import { describePlan } from './plans.tsx';

export function Settings() {
  const mode = currentMode();
  const session = useSession();
  const billing = useQuery({ queryKey: [mode, 'settings'], queryFn: () => unwrap(api.GET('/v1/settings')) });
  const usage = useQuery({ queryKey: [mode, 'usage-settings'], queryFn: () => unwrap(api.GET('/v1/settings/usage')) });
  const notifications = useQuery({
    queryKey: [mode, 'notification-settings'],
    queryFn: () => unwrap(api.GET('/v1/settings/notifications')),
  });
  const portal = useQuery({
    queryKey: [mode, 'portal-settings'],
    queryFn: () => unwrap(api.GET('/v1/settings/customer_portal')),
  });
  const branding = useQuery({ queryKey: ['branding'], queryFn: () => unwrap(api.GET('/v1/settings/branding')) });
  const readOnly = !canManage(session);
  return (
    <>
      <PageTitle>Settings</PageTitle>
      {readOnly ? <p className="card">Members can read the settings; an owner changes them.</p> : null}
      <ErrorNote error={billing.error ?? usage.error ?? notifications.error} />
      {billing.data ? (
        <ActionForm
          key={JSON.stringify(billing.data)}
          title={`Billing (${mode === 'test' ? 'sandbox' : 'live'})`}
          submit="Save billing settings"
          action={(v) =>
            unwrap(
              api.PATCH('/v1/settings', {
                body: {
                  grace_period_days: Number(v.grace_period_days),
                  dunning_final_action: v.dunning_final_action as 'cancel' | 'pause',
                },
              }),
            )
          }
        >
          <Field
            label="Grace period (days)"
            name="grace_period_days"
            type="number"
            defaultValue={billing.data.grace_period_days}
          />
          <Field
            label="After the last failed retry"
            name="dunning_final_action"
            options={['cancel', 'pause']}
            defaultValue={billing.data.dunning_final_action}
          />
        </ActionForm>
      ) : null}
      {usage.data ? (
        <ActionForm
          key={JSON.stringify(usage.data)}
          title="Usage billing"
          submit="Save usage settings"
          action={(v) =>
            unwrap(
              api.POST('/v1/settings/usage', {
                body: {
                  usage_grace_period_seconds: Number(v.usage_grace_period_seconds),
                  late_events: v.late_events as 'refuse' | 'bill_next_invoice',
                },
              }),
            )
          }
        >
          <Field
            label="Grace window after a period ends (seconds)"
            name="usage_grace_period_seconds"
            type="number"
            defaultValue={usage.data.usage_grace_period_seconds}
          />
          <Field
            label="Events after their period was invoiced"
            name="late_events"
            options={['refuse', 'bill_next_invoice']}
            defaultValue={usage.data.late_events}
          />
        </ActionForm>
      ) : null}
      {notifications.data ? (
        <ActionForm
          key={JSON.stringify(notifications.data)}
          title="Email notifications"
          submit="Save notifications"
          action={(v) =>
            unwrap(
              api.PATCH('/v1/settings/notifications', {
                body: {
                  payout_confirmations: v.payout_confirmations === 'on',
                  failed_payments: v.failed_payments === 'on',
                  subscription_cancellations: v.subscription_cancellations === 'on',
                },
              }),
            )
          }
        >
          {(['payout_confirmations', 'failed_payments', 'subscription_cancellations'] as const).map((name) => (
            <div className="field checkbox" key={name}>
              <input id={`n-${name}`} type="checkbox" name={name} defaultChecked={notifications.data[name]} />
              <label htmlFor={`n-${name}`}>{name.replaceAll('_', ' ')}</label>
            </div>
          ))}
        </ActionForm>
      ) : null}
      {portal.data ? (
        <ActionForm
          key={JSON.stringify(portal.data)}
          title="Customer portal"
          submit="Save portal settings"
          action={(v, form) => {
            const body: Record<string, boolean | string[] | null> = {
              plan_changes: v.plan_changes === 'on',
              cancellation: v.cancellation === 'on',
              resume: v.resume === 'on',
              quantity_changes: v.quantity_changes === 'on',
            };
            // promotion_codes (issue #27) is newer than the generated SDK types: sent when the engine shows it.
            if ('promotion_codes' in portal.data!) body.promotion_codes = v.promotion_codes === 'on';
            body.plans = v.portal_plans === 'some' ? form.getAll('portal_plan').map(String) : null;
            return call('PATCH', '/v1/settings/customer_portal', { body });
          }}
        >
          {(
            [
              ['plan_changes', 'Customers may change plans'],
              ['cancellation', 'Customers may cancel at period end'],
              ['resume', 'Customers may resume'],
              ['quantity_changes', 'Customers may change quantities (seats)'],
              ['promotion_codes', 'Customers may enter promotion codes'],
            ] as const
          )
            .filter(([name]) => name in portal.data!)
            .map(([name, label]) => (
              <div className="field checkbox" key={name}>
                <input
                  id={`p-${name}`}
                  type="checkbox"
                  name={name}
                  defaultChecked={(portal.data as unknown as Record<string, boolean>)[name]}
                />
                <label htmlFor={`p-${name}`}>{label}</label>
              </div>
            ))}
          <PortalPlans chosen={(portal.data as { plans?: string[] | null }).plans ?? null} />
        </ActionForm>
      ) : null}
      {branding.data ? <BrandingForm branding={branding.data} readOnly={readOnly} /> : null}
    </>
  );
}

/**
 * Which plans a customer may switch to in the portal (the setting's `plans`): every active recurring
 * plan (null), or only those ticked. A chosen plan that was archived since is still listed, marked.
 */
function PortalPlans({ chosen }: { chosen: string[] | null }) {
  const plans = useActivePlans(true);
  const [only, setOnly] = useState(chosen !== null);
  const recurring = (plans.data?.data ?? []).filter((p) => Boolean(p.interval));
  const archived = plans.data ? (chosen ?? []).filter((id) => !recurring.some((p) => p.id === id)) : [];
  return (
    <fieldset className="field plain-fieldset">
      <legend>Plans customers may switch to (with plan changes on)</legend>
      <div className="field checkbox">
        <input
          id="portal-plans-all"
          type="radio"
          name="portal_plans"
          value="all"
          checked={!only}
          onChange={() => setOnly(false)}
        />
        <label htmlFor="portal-plans-all">Every active recurring plan</label>
      </div>
      <div className="field checkbox">
        <input
          id="portal-plans-some"
          type="radio"
          name="portal_plans"
          value="some"
          checked={only}
          onChange={() => setOnly(true)}
        />
        <label htmlFor="portal-plans-some">Only these plans</label>
      </div>
      {only ? (
        recurring.length === 0 && archived.length === 0 ? (
          <p className="muted">No recurring plans yet: create one on the Plans page.</p>
        ) : (
          <ul className="plain">
            {recurring.map((p) => {
              const described = describePlan(p);
              return (
                <li key={p.id} className="field checkbox">
                  <input
                    id={`portal-plan-${p.id}`}
                    type="checkbox"
                    name="portal_plan"
                    value={p.id}
                    defaultChecked={chosen?.includes(p.id) ?? false}
                  />
                  <label htmlFor={`portal-plan-${p.id}`}>
                    {p.name}: {described.price}, {described.billing}
                  </label>
                </li>
              );
            })}
            {archived.map((id) => (
              <li key={id} className="field checkbox">
                <input id={`portal-plan-${id}`} type="checkbox" name="portal_plan" value={id} defaultChecked />
                <label htmlFor={`portal-plan-${id}`}>{id} (archived or not found: not offered)</label>
              </li>
            ))}
          </ul>
        )
      ) : null}
    </fieldset>
  );
}

const readAsDataUrl = (file: File) =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });

/** Business name, brand colour and logo (PATCH /v1/settings/branding): used on the pay page, the portal, emails and invoice PDFs. */
function BrandingForm({ branding, readOnly }: { branding: Schemas['Branding']; readOnly: boolean }) {
  const client = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState(false);
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const file = form.get('logo');
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      const name = String(form.get('business_name') ?? '').trim();
      const body: { business_name: string | null; brand_color: string; logo?: string | null } = {
        business_name: name || null,
        brand_color: String(form.get('brand_color')),
      };
      if (form.get('remove_logo') === 'on') body.logo = null;
      else if (file instanceof File && file.size > 0) body.logo = await readAsDataUrl(file);
      await unwrap(api.PATCH('/v1/settings/branding', { body }));
      await client.invalidateQueries();
      setSaved(true);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="card form" onSubmit={onSubmit} aria-label="Branding">
      <h2>Branding</h2>
      <p>What customers see on the pay page, the customer portal, emails and invoice PDFs (both modes).</p>
      <div className="brand-preview" data-brand-color={branding.effective.color}>
        {branding.effective.logo_url ? <img src={branding.effective.logo_url} alt="Current logo" /> : null}
        <span>{branding.effective.name}</span>
      </div>
      <fieldset className="plain-fieldset" disabled={readOnly || busy}>
        <div className="field">
          <label htmlFor="brand-name">Business name</label>
          <input
            id="brand-name"
            name="business_name"
            maxLength={100}
            defaultValue={branding.business_name ?? ''}
            placeholder={branding.effective.name}
          />
        </div>
        <div className="field">
          <label htmlFor="brand-color">Brand colour</label>
          <input id="brand-color" name="brand_color" type="color" defaultValue={branding.effective.color} />
        </div>
        <div className="field">
          <label htmlFor="brand-logo">Logo (PNG or JPEG, up to 64 KB)</label>
          <input id="brand-logo" name="logo" type="file" accept="image/png,image/jpeg" />
        </div>
        {branding.logo_url ? (
          <div className="field checkbox">
            <input id="brand-remove-logo" type="checkbox" name="remove_logo" />
            <label htmlFor="brand-remove-logo">Remove the logo</label>
          </div>
        ) : null}
        {readOnly ? null : <button type="submit">Save branding</button>}
      </fieldset>
      {saved ? <p role="status">Branding saved.</p> : null}
      <ErrorNote error={error} />
    </form>
  );
}
