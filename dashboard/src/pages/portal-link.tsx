/** Placeholder until the customer portal lands: no portal link yet. */
export function PortalLinkButton(_: { customerId: string }) {
  return <span>—</span>;
}
