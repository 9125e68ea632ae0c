import { useQuery } from '@tanstack/react-query';
import { api, currentMode, unwrap } from '../api.ts';
import { canManage, useSession } from '../session.tsx';
import { ActionForm, ErrorNote, Field, PageTitle } from '../ui.tsx';

export function Settings() {
  const mode = currentMode();
  const session = useSession();
  const billing = useQuery({ queryKey: [mode, 'settings'], queryFn: () => unwrap(api.GET('/v1/settings')) });
  const notifications = useQuery({ queryKey: [mode, 'notification-settings'], queryFn: () => unwrap(api.GET('/v1/settings/notifications')) });
  const portal = useQuery({ queryKey: [mode, 'portal-settings'], queryFn: () => unwrap(api.GET('/v1/settings/customer_portal')) });
  const readOnly = !canManage(session);
  return (
    <>
      <PageTitle>Settings</PageTitle>
      {readOnly ? <p className="card">Members can read the settings; an owner changes them.</p> : null}
      <ErrorNote error={billing.error ?? notifications.error} />
      {billing.data ? (
        <ActionForm
          key={JSON.stringify(billing.data)}
          title={`Billing (${mode === 'test' ? 'sandbox' : 'live'})`}
          submit="Save billing settings"
          action={(v) =>
            unwrap(api.PATCH('/v1/settings', { body: { grace_period_days: Number(v.grace_period_days), dunning_final_action: v.dunning_final_action as 'cancel' | 'pause' } }))
          }
        >
          <Field label="Grace period (days)" name="grace_period_days" type="number" defaultValue={billing.data.grace_period_days} />
          <Field label="After the last failed retry" name="dunning_final_action" options={['cancel', 'pause']} defaultValue={billing.data.dunning_final_action} />
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
                body: { payout_confirmations: v.payout_confirmations === 'on', failed_payments: v.failed_payments === 'on', subscription_cancellations: v.subscription_cancellations === 'on' },
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
          action={(v) =>
            unwrap(api.PATCH('/v1/settings/customer_portal', { body: { plan_changes: v.plan_changes === 'on', cancellation: v.cancellation === 'on', resume: v.resume === 'on' } }))
          }
        >
          {(
            [
              ['plan_changes', 'Customers may change plans'],
              ['cancellation', 'Customers may cancel at period end'],
              ['resume', 'Customers may resume'],
            ] as const
          ).map(([name, label]) => (
            <div className="field checkbox" key={name}>
              <input id={`p-${name}`} type="checkbox" name={name} defaultChecked={portal.data[name]} />
              <label htmlFor={`p-${name}`}>{label}</label>
            </div>
          ))}
        </ActionForm>
      ) : null}
      <section className="card" aria-label="Branding">
        <h2>Branding</h2>
        <p>The account name ({session.account?.name ?? '—'}) heads pages, emails and PDFs. A logo and colour setting does not exist in the API yet.</p>
      </section>
    </>
  );
}
