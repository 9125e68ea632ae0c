import { useState } from 'react';

import { api, unwrap } from '../api.ts';
import { ActionButton } from '../ui.tsx';

/** Makes a customer's portal link (7 days) to copy, or emails it to the customer. */
export function PortalLinkButton({ customerId }: { customerId: string }) {
  const [url, setUrl] = useState<string | null>(null);
  const [emailed, setEmailed] = useState(false);
  const make = (send_email: boolean) =>
    unwrap(api.POST('/v1/customers/{id}/portal_link', { params: { path: { id: customerId } }, body: { send_email } }));
  return (
    <div className="actions">
      <ActionButton
        label="Portal link"
        action={() => make(false)}
        done={(link) => setUrl((link as { url: string }).url)}
      />
      <ActionButton
        label={emailed ? 'Emailed' : 'Email link'}
        action={() => make(true)}
        done={() => setEmailed(true)}
      />
      {url ? (
        <a href={url} target="_blank" rel="noopener" aria-label={`Open portal of ${customerId}`}>
          Open portal
        </a>
      ) : null}
    </div>
  );
}
