/**
 * What a plan change would do, before it is made (the customer portal's preview): the
 * invoice charged at once, if any, and the next invoice after it. Computed from the
 * workflow's own state with the functions the workflow runs (planChangeKind,
 * upgradeInvoice) and the upcoming-invoice function of GET /v1/invoices/upcoming
 * (upcomingInvoice), so the preview is what the change then does.
 */
import type { PlanTerms } from './subscription.ts';
import {
  commandProblem,
  type InvoiceInput,
  planChangeKind,
  type SubscriptionState,
  upcomingInvoice,
  upgradeInvoice,
} from './subscription-decisions.ts';

export interface PlanChangePreview {
  /** As the workflow's changePlan sorts it: an upgrade is charged now; a downgrade waits for the renewal; in a trial the plan simply changes. */
  kind: 'upgrade' | 'downgrade' | 'trial' | 'revert';
  /** The upgrade's invoice, charged at once on confirmation (prorated); null for every other kind. */
  dueNow: InvoiceInput | null;
  /** The invoice the subscription makes next by itself after the change; null when none is coming. */
  next: InvoiceInput | null;
}

/**
 * The state the workflow is in right after it changes to `next` at `now` (workflows/subscription.ts changePlan):
 * an upgrade moves the plan (and, for another interval, starts a new period at `now`); a downgrade waits as the
 * pending plan; in a trial the plan changes; back to the current plan drops a pending downgrade.
 */
function stateAfter(
  state: SubscriptionState,
  kind: PlanChangePreview['kind'],
  next: PlanTerms,
  upgrade: ReturnType<typeof upgradeInvoice> | null,
): SubscriptionState {
  const withPlan = (): SubscriptionState => ({
    ...state,
    plan: next,
    pendingPlan: null,
    ...(state.items ? { items: [{ ...next, itemId: state.items[0]!.itemId }] } : {}),
  });
  switch (kind) {
    case 'revert':
      return { ...state, pendingPlan: null };
    case 'downgrade':
      return { ...state, pendingPlan: next };
    case 'trial':
      return withPlan();
    case 'upgrade': {
      const moved = withPlan();
      if (upgrade!.sameInterval) return moved;
      const s = state.subscription;
      return {
        ...moved,
        subscription: {
          ...s,
          billingAnchor: upgrade!.periodStart,
          anchorCycle: s.billingCycle,
          stubStart: null,
          currentPeriodStart: upgrade!.periodStart,
          currentPeriodEnd: upgrade!.periodEnd,
        },
      };
    }
  }
}

/**
 * The preview of a change to `next` at `now`, or the reason the workflow would refuse it (the same
 * commandProblem its update validator asks).
 */
export function previewPlanChange(
  state: SubscriptionState,
  next: PlanTerms,
  now: Date,
  spreadMinutes = 0,
): PlanChangePreview | { problem: string } {
  const problem = commandProblem(state, { kind: 'changePlan', plan: next });
  if (problem) return { problem };
  const kind = planChangeKind(state, next);
  const upgrade = kind === 'upgrade' ? upgradeInvoice(state, next, now) : null;
  return {
    kind,
    dueNow: upgrade?.invoice ?? null,
    next: upcomingInvoice(stateAfter(state, kind, next, upgrade), spreadMinutes),
  };
}
