/**
 * One-off invoices (POST /v1/invoices): what their workflow (workflows/invoice.ts) decides, and
 * what their emails say. Pure: the workflow, the services and the tests share it.
 */
import { adjustmentRows, type AdjustmentView, reverseChargeNote } from './invoice-lines.ts';
import { type DateStyle, formatHumanDate, formatPeriod, humanizeInstants } from './locale.ts';
import { formatMoney } from './money.ts';

const day = 86_400_000;

/** The reminders of a send_invoice invoice, from its due date: 3 days before, on the day, 7 days after. */
export const reminderOffsetsDays = [-3, 0, 7] as const;
export type ReminderKind = 'before_due' | 'due' | 'overdue';
const kinds: Record<(typeof reminderOffsetsDays)[number], ReminderKind> = {
  [-3]: 'before_due',
  0: 'due',
  7: 'overdue',
};

/** The reminders still to come after `finalizedAt`, in order: one whose time is already past when it is sent is skipped (a 2-day invoice has no "3 days before"). */
export function reminderSchedule(dueDate: Date, finalizedAt: Date): { kind: ReminderKind; at: Date }[] {
  return reminderOffsetsDays
    .map((offset) => ({ kind: kinds[offset], at: new Date(dueDate.getTime() + offset * day) }))
    .filter((reminder) => reminder.at.getTime() > finalizedAt.getTime());
}

/** When a send_invoice invoice nobody paid is marked uncollectible: the account's grace period after the last reminder. */
export function sendInvoiceGivesUpAt(dueDate: Date, gracePeriodDays: number): Date {
  return new Date(dueDate.getTime() + (reminderOffsetsDays.at(-1)! + gracePeriodDays) * day);
}

/** The due date of an invoice finalized at `at`: `days_until_due` days later (send_invoice), or at once (charge_automatically). */
export function dueDateOf(
  at: Date,
  collectionMethod: 'charge_automatically' | 'send_invoice',
  daysUntilDue: number | null,
): Date {
  return collectionMethod === 'send_invoice' ? new Date(at.getTime() + (daysUntilDue ?? 0) * day) : at;
}

export interface InvoiceEmailView {
  accountName: string;
  number: string;
  currency: string;
  lines: {
    description: string;
    quantity: number;
    amount: number | null;
    total?: number;
    period_start: string;
    period_end: string;
  }[];
  subtotal: number;
  total: number;
  amountDue: number;
  /** The discount, taxes and balance (domain/invoice-lines.ts adjustmentRows); absent: none. */
  adjustments?: AdjustmentView;
  dueDate: Date;
  description: string | null;
  payUrl: string;
  pdfUrl: string;
  style: DateStyle & { locale?: string };
}

export type InvoiceEmailKind = 'finalized' | ReminderKind;

/** The line's amount: its total, else unit × quantity (domain/invoice-lines.ts lineAmount, repeated to stay dependency-free). */
const amountOfLine = (line: InvoiceEmailView['lines'][number]) => line.total ?? (line.amount ?? 0) * line.quantity;

/**
 * The email of a send_invoice invoice: the invoice itself (lines with quantity, unit amount and period in
 * human dates; subtotal and total as on the PDF), its due date and the pay link.
 */
export function invoiceEmail(kind: InvoiceEmailKind, view: InvoiceEmailView): { subject: string; text: string } {
  const locale = view.style.locale ?? 'en-US';
  const money = (amount: number) => formatMoney(amount, view.currency, locale);
  const due = formatHumanDate(view.dueDate, view.style);
  const owed = money(view.amountDue);
  const subject = {
    finalized: `Invoice ${view.number} from ${view.accountName}: ${owed} due ${due}`,
    before_due: `Reminder: invoice ${view.number} (${owed}) is due ${due}`,
    due: `Invoice ${view.number} (${owed}) is due today`,
    overdue: `Overdue: invoice ${view.number} (${owed}) was due ${due}`,
  }[kind];
  const opening = {
    finalized: `${view.accountName} sent you invoice ${view.number} for ${owed}, due ${due}.`,
    before_due: `Invoice ${view.number} from ${view.accountName} for ${owed} is due ${due}.`,
    due: `Invoice ${view.number} from ${view.accountName} for ${owed} is due today, ${due}.`,
    overdue: `Invoice ${view.number} from ${view.accountName} for ${owed} was due ${due} and is not paid yet.`,
  }[kind];
  const lines = view.lines.map((line) => {
    const unit = line.amount === null ? '' : ` × ${money(line.amount)}`;
    const start = new Date(line.period_start);
    const end = new Date(line.period_end);
    const period =
      start.getTime() === end.getTime() ? formatHumanDate(start, view.style) : formatPeriod(start, end, view.style);
    return `- ${humanizeInstants(line.description, view.style)} (${period}): ${line.quantity}${unit} = ${money(amountOfLine(line))}`;
  });
  const rows = adjustmentRows(view.adjustments ?? { total: view.total }, money);
  const text = [
    opening,
    ...(view.description ? ['', view.description] : []),
    '',
    ...lines,
    '',
    `Subtotal: ${money(view.subtotal)}`,
    ...rows.beforeTotal.map((row) => `${row.label}: ${row.value}`),
    `Total: ${money(view.total)}`,
    ...rows.afterTotal.map((row) => `${row.label}: ${row.value}`),
    `Amount due: ${owed}`,
    ...(view.adjustments?.reverseCharge ? ['', reverseChargeNote] : []),
    '',
    `Pay online: ${view.payUrl}`,
    `The invoice as a PDF: ${view.pdfUrl}`,
  ].join('\n');
  return { subject, text };
}
