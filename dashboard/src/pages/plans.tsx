import { api, date, money, unwrap } from '../api.ts';
import { ActionForm, Field, PagedTable, PageTitle } from '../ui.tsx';

export function Plans() {
  return (
    <>
      <PageTitle>Plans</PageTitle>
      <ActionForm
        title="New plan"
        submit="Create plan"
        action={(v) =>
          unwrap(
            api.POST('/v1/plans', {
              body: {
                name: v.name!,
                amount: Math.round(Number(v.amount) * 100),
                currency: v.currency!,
                interval: v.interval as 'month',
                trial_period_days: v.trial ? Number(v.trial) : undefined,
              },
            }),
          )
        }
      >
        <Field label="Name" name="name" required />
        <Field label="Price" name="amount" type="number" required placeholder="20.00" />
        <Field label="Currency" name="currency" options={['USD', 'EUR', 'GBP']} />
        <Field label="Interval" name="interval" options={['month', 'year', 'week', 'day']} />
        <Field label="Trial days" name="trial" type="number" />
      </ActionForm>
      <PagedTable
        label="Plans"
        queryKey={['plans']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/plans', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'Name', cell: (p) => p.name },
          { header: 'Price', cell: (p) => `${money(p.amount, p.currency)} / ${p.interval}` },
          { header: 'ID', cell: (p) => <code>{p.id}</code> },
          { header: 'Created', cell: (p) => date(p.created_at) },
        ]}
      />
    </>
  );
}
