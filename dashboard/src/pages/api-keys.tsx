import { useState } from 'react';

import { api, currentMode, date, unwrap } from '../api.ts';
import { ActionButton, ActionForm, Field, PagedTable, PageTitle } from '../ui.tsx';

export function ApiKeys() {
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <>
      <PageTitle>API keys</PageTitle>
      {secret ? (
        <p className="card secret" role="status">
          New key (shown once): <code>{secret}</code>
        </p>
      ) : null}
      <ActionForm
        title="New API key"
        submit="Create key"
        action={(v) => unwrap(api.POST('/v1/api_keys', { body: { name: v.name || undefined, mode: currentMode() } }))}
        done={(created) => setSecret((created as { secret?: string }).secret ?? null)}
      >
        <Field label="Name" name="name" />
      </ActionForm>
      <PagedTable
        label="API keys"
        queryKey={['api-keys']}
        fetchPage={async () => {
          const keys = await unwrap(api.GET('/v1/api_keys'));
          return { data: keys.data.filter((k) => k.livemode === (currentMode() === 'live')), has_more: false };
        }}
        columns={[
          { header: 'Name', cell: (k) => k.name ?? '—' },
          { header: 'Key', cell: (k) => <code>{k.redacted_secret}</code> },
          { header: 'Last used', cell: (k) => date(k.last_used_at) },
          { header: 'Created', cell: (k) => date(k.created_at) },
          {
            header: 'Actions',
            cell: (k) => (
              <ActionButton
                label="Revoke"
                className="danger"
                confirm="Revoke this key?"
                action={() => unwrap(api.DELETE('/v1/api_keys/{id}', { params: { path: { id: k.id } } }))}
              />
            ),
          },
        ]}
      />
    </>
  );
}
