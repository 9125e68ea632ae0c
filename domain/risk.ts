import { currencyExponent } from './money.ts';

/**
 * The deterministic risk scorer behind every transaction's `risk_level`, and the
 * 0-100 score that webhooks will carry as `x-risk-score`. Points add up:
 *
 * | signal | points |
 * |---|---|
 * | amount ≥ 1,000 major units (e.g. $1,000) | 20; ≥ 10,000: 40 |
 * | refund | 15 |
 * | account younger than 24 hours | 20 |
 * | velocity: transactions on the account in the past hour, beyond 10 | 2 each, at most 30 |
 *
 * low: 0-29, medium: 30-59, high: 60-100.
 */
export interface RiskInput {
  amount: number;
  currency: string;
  type: 'payment' | 'credit' | 'refund';
  accountAgeMs: number;
  transactionsLastHour: number;
}

/** Transactions beyond this many in the past hour add nothing more (10 free + 15 × 2 points = the 30-point cap). */
export const velocityCountCap = 25;

export function scoreRisk(input: RiskInput): { score: number; level: 'low' | 'medium' | 'high' } {
  const major = input.amount / 10 ** currencyExponent(input.currency);
  let score = 0;
  if (major >= 10_000) score += 40;
  else if (major >= 1_000) score += 20;
  if (input.type === 'refund') score += 15;
  if (input.accountAgeMs < 24 * 3_600_000) score += 20;
  score += Math.min(30, Math.max(0, input.transactionsLastHour - 10) * 2);
  score = Math.min(100, score);
  return { score, level: score >= 60 ? 'high' : score >= 30 ? 'medium' : 'low' };
}
