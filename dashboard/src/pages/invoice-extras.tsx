/**
 * An invoice's totals (subtotal, discount, total excluding tax, tax per rate, total, balance
 * applied, amount due) and its credit notes (issue one by lines or amount, with a reason and where
 * the money goes; the invoice's credit notes listed, PDF, void).
 */
import { useQuery } from '@tanstack/react-query';
import { Fragment, useId, useState } from 'react';

import { call, currentMode, date, money, type Schemas, toMinor } from '../api.ts';
import { type CreditNote, creditNoteReasons, type InvoiceTotalsFields, type ListOf } from '../billing-types.ts';
import { ActionButton, ActionForm, ErrorNote, Field, Status } from '../ui.tsx';

type Invoice = Schemas['Invoice'] & InvoiceTotalsFields;

/** The rows of an invoice's totals, in Stripe's order; the discount, tax and balance rows only when the invoice has them. */
export function totalsRows(invoice: Invoice): [string, string][] {
  const m = (amount: number) => money(amount, invoice.currency);
  const rows: [string, string][] = [['Subtotal', m(invoice.subtotal)]];
  for (const discount of invoice.total_discount_amounts ?? [])
    if (discount.amount)
      rows.push([
        discount.discount.startsWith('di_') ? 'Discount' : `Discount (${discount.discount})`,
        m(-discount.amount),
      ]);
  const taxes = invoice.total_tax_amounts ?? [];
  if (taxes.length) rows.push(['Total excluding tax', m(invoice.total_excluding_tax ?? invoice.total)]);
  for (const tax of taxes)
    rows.push([
      `${tax.display_name} ${tax.percentage}%${tax.inclusive ? ' (included)' : ''} on ${m(tax.taxable_amount)}`,
      m(tax.amount),
    ]);
  rows.push(['Total', m(invoice.total)]);
  // amount_due = total + (starting_balance − ending_balance) − what credit notes took off an open invoice.
  const applied = (invoice.starting_balance ?? 0) - (invoice.ending_balance ?? 0);
  if (applied !== 0)
    rows.push([
      invoice.total < 0
        ? "Added to the customer's balance"
        : applied < 0
          ? 'Credit balance applied'
          : 'Previous balance owed',
      m(invoice.total < 0 ? -applied : applied),
    ]);
  const credited = invoice.status === 'draft' ? 0 : invoice.total + applied - invoice.amount_due;
  if (invoice.total >= 0 && credited > 0) rows.push(['Credit notes', m(-credited)]);
  rows.push(
    ['Amount due', m(invoice.amount_due)],
    ['Amount paid', m(invoice.amount_paid)],
    ['Amount remaining', m(invoice.amount_remaining)],
  );
  if (invoice.amount_refunded) rows.push(['Refunded', m(invoice.amount_refunded)]);
  return rows;
}

export function InvoiceTotals({ invoice }: { invoice: Schemas['Invoice'] }) {
  const i = invoice as Invoice;
  return (
    <>
      <dl className="facts totals" aria-label="Totals">
        {totalsRows(i).map(([label, value]) => (
          <Fragment key={label}>
            <dt>{label}</dt>
            <dd>{value}</dd>
          </Fragment>
        ))}
      </dl>
      {i.customer_tax_exempt === 'reverse' ? (
        <p className="muted">Reverse charge: the customer accounts for the tax.</p>
      ) : null}
      {i.customer_tax_ids?.length ? (
        <p className="muted">Customer tax IDs: {i.customer_tax_ids.map((t) => `${t.type} ${t.value}`).join(', ')}</p>
      ) : null}
    </>
  );
}

type Outcome = 'refund' | 'credit' | 'out_of_band';

/** Issues a credit note: amounts per line (or one amount), a reason, a memo, and on a paid invoice where the money goes (on an open one it lowers what is due). */
function CreditNoteForm({ invoice }: { invoice: Invoice }) {
  const id = useId();
  const [by, setBy] = useState<'lines' | 'amount'>('lines');
  const [outcome, setOutcome] = useState<Outcome>('refund');
  return (
    <ActionForm
      title="Issue credit note"
      submit="Issue credit note"
      action={(v) => {
        const minor = (text: string, field: string) => {
          const value = toMinor(text, invoice.currency);
          if (value === null || value <= 0)
            throw new Error(`${field}: must be an amount above zero in ${invoice.currency}, like 10.00.`);
          return value;
        };
        const body: Record<string, unknown> = { invoice: invoice.id };
        let total = 0;
        if (by === 'amount') {
          total = minor(v.amount ?? '', 'amount');
          body.amount = total;
        } else {
          const lines = invoice.lines.flatMap((line, index) => {
            const text = v[`line_${index}`];
            if (!text) return [];
            const amount = minor(text, `lines[${index}].amount`);
            total += amount;
            return [{ type: 'invoice_line_item', line_index: index, amount }];
          });
          if (!lines.length) throw new Error('lines: give an amount for at least one line (or credit one amount).');
          body.lines = lines;
        }
        if (v.reason) body.reason = v.reason;
        if (v.memo) body.memo = v.memo;
        // An open invoice's credit note lowers what is due: no money goes anywhere.
        if (invoice.status === 'paid') {
          body[outcome === 'refund' ? 'refund_amount' : outcome === 'credit' ? 'credit_amount' : 'out_of_band_amount'] =
            total;
          if (outcome !== 'credit') body.credit_amount = 0;
        }
        return call('POST', '/v1/credit_notes', { body });
      }}
    >
      <div className="field">
        <label htmlFor={`${id}-by`}>Credit</label>
        <select id={`${id}-by`} value={by} onChange={(e) => setBy(e.target.value as typeof by)}>
          <option value="lines">By line</option>
          <option value="amount">One amount</option>
        </select>
      </div>
      {by === 'amount' ? (
        <Field label="Amount to credit" name="amount" required placeholder="10.00" />
      ) : (
        invoice.lines.map((line, index) => (
          <Field
            key={index}
            label={`Credit on line ${index + 1}: ${line.description} (${money(line.amount, invoice.currency)})`}
            name={`line_${index}`}
            placeholder="0.00"
          />
        ))
      )}
      <div className="field">
        <label htmlFor={`${id}-reason`}>Reason</label>
        <select id={`${id}-reason`} name="reason" defaultValue="">
          <option value="">—</option>
          {creditNoteReasons.map((reason) => (
            <option key={reason} value={reason}>
              {reason.replaceAll('_', ' ')}
            </option>
          ))}
        </select>
      </div>
      {invoice.status === 'paid' ? (
        <div className="field">
          <label htmlFor={`${id}-outcome`}>Money goes</label>
          <select id={`${id}-outcome`} value={outcome} onChange={(e) => setOutcome(e.target.value as Outcome)}>
            <option value="refund">Refund to the payment method</option>
            <option value="credit">Credit to the customer's balance</option>
            <option value="out_of_band">Out of band (given back outside the engine)</option>
          </select>
        </div>
      ) : (
        <p className="muted">
          The invoice is open: the credit note lowers what is left to pay (an invoice credited to nothing due is paid
          without a charge).
        </p>
      )}
      <Field label="Memo to the customer" name="memo" />
    </ActionForm>
  );
}

/**
 * A promotion code applied to an open one-off invoice (POST /v1/invoices/{id}/discounts): it discounts that invoice
 * only. Offered while the invoice has no discount (one per invoice); the API's refusal (an unknown, inactive or
 * expired code, a minimum not reached, a credit note already issued) is shown in the form, nothing changed.
 */
function PromotionCodeForm({ invoice }: { invoice: Invoice }) {
  return (
    <ActionForm
      title="Apply a promotion code"
      submit="Apply promotion code"
      action={(v) => {
        const code = (v.promotion_code ?? '').trim();
        if (!code) throw new Error('promotion_code: type the code the customer was given.');
        return call('POST', `/v1/invoices/${invoice.id}/discounts`, { body: { promotion_code: code } });
      }}
    >
      <Field label="Promotion code" name="promotion_code" required placeholder="SPRING20" />
      <p className="muted">It discounts this invoice only; taxes and the amount due follow.</p>
    </ActionForm>
  );
}

/** The invoice's credit notes, and the form to issue one (paid and open invoices: the API refuses the others). */
export function InvoiceExtras({ invoice }: { invoice: Schemas['Invoice'] }) {
  const i = invoice as Invoice;
  const notes = useQuery({
    queryKey: [currentMode(), 'credit-notes', i.id],
    queryFn: () => call<ListOf<CreditNote>>('GET', '/v1/credit_notes', { query: { invoice: i.id, limit: 100 } }),
    enabled: i.status !== 'draft',
  });
  if (i.status === 'draft') return null;
  const rows = notes.data?.data ?? [];
  const label = `Credit notes of ${i.number ?? i.id}`;
  return (
    <>
      {i.status === 'open' && !i.subscription_id && !i.discounts?.length ? <PromotionCodeForm invoice={i} /> : null}
      <section className="card" aria-label="Credit notes">
        <h2>Credit notes</h2>
        <ErrorNote error={notes.error} />
        <div className="table-wrap" tabIndex={0} role="region" aria-label={label}>
          <table>
            <caption className="visually-hidden">{label}</caption>
            <thead>
              <tr>
                <th scope="col">Number</th>
                <th scope="col">Total</th>
                <th scope="col">Where it went</th>
                <th scope="col">Reason</th>
                <th scope="col">Status</th>
                <th scope="col">Date</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((note) => (
                <tr key={note.id}>
                  <td data-label="Number">{note.number}</td>
                  <td data-label="Total">{money(note.total, note.currency)}</td>
                  <td data-label="Where it went">
                    {[
                      note.refund_amount ? `${money(note.refund_amount, note.currency)} refunded` : null,
                      note.credit_amount ? `${money(note.credit_amount, note.currency)} to the balance` : null,
                      note.out_of_band_amount ? `${money(note.out_of_band_amount, note.currency)} out of band` : null,
                    ]
                      .filter(Boolean)
                      .join(', ') || 'lowered the amount due'}
                  </td>
                  <td data-label="Reason">{note.reason?.replaceAll('_', ' ') ?? '—'}</td>
                  <td data-label="Status">
                    <Status value={note.status} />
                  </td>
                  <td data-label="Date">{date(note.created_at)}</td>
                  <td data-label="Actions">
                    <div className="actions">
                      <a href={note.pdf} target="_blank" rel="noopener">
                        PDF of {note.number}
                      </a>
                      {note.status === 'issued' && !note.refund ? (
                        <ActionButton
                          label={`Void ${note.number}`}
                          className="danger"
                          confirm={`Void credit note ${note.number}? Its credit to the balance is taken back.`}
                          action={() => call('POST', `/v1/credit_notes/${note.id}/void`)}
                        />
                      ) : null}
                    </div>
                  </td>
                </tr>
              ))}
              {!notes.isLoading && rows.length === 0 ? (
                <tr>
                  <td colSpan={7}>No credit notes.</td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </div>
        {i.status === 'paid' || i.status === 'open' ? (
          <CreditNoteForm invoice={i} />
        ) : (
          <p className="muted">Credit notes are issued on paid and open invoices.</p>
        )}
      </section>
    </>
  );
}
