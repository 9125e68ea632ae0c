/**
 * An invoice's totals (subtotal to amount due) and what else hangs off an invoice's page.
 */
import { Fragment } from 'react';
import { money, type Schemas } from '../api.ts';

type Invoice = Schemas['Invoice'];

/** Subtotal, total, amount due, paid, remaining and refunded, as the invoice object states them. */
export function InvoiceTotals({ invoice }: { invoice: Invoice }) {
  const m = (amount: number) => money(amount, invoice.currency);
  const rows: [string, string][] = [
    ['Subtotal', m(invoice.subtotal)],
    ['Total', m(invoice.total)],
    ['Amount due', m(invoice.amount_due)],
    ['Amount paid', m(invoice.amount_paid)],
    ['Amount remaining', m(invoice.amount_remaining)],
  ];
  if (invoice.amount_refunded) rows.push(['Refunded', m(invoice.amount_refunded)]);
  return (
    <dl className="facts totals" aria-label="Totals">
      {rows.map(([label, value]) => (
        <Fragment key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

export function InvoiceExtras(_props: { invoice: Invoice }) {
  return null;
}
