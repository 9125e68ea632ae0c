/**
 * Failed-payment retry policy: `intervals[i]` is when attempt i+1 happens,
 * counted from the first failure (SPEC.md's default: immediately, 24 hours,
 * 3 days, 7 days). Attempt 1 is the failed charge itself ("immediate").
 */
export interface RetryPolicy {
  max_attempts: number;
  intervals: string[];
}

export const defaultRetryPolicy: RetryPolicy = { max_attempts: 4, intervals: ['immediate', '24h', '3d', '7d'] };
export const defaultGracePeriodDays = 7;
export const maxGracePeriodDays = 60;

const units: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** 'immediate' | '<n>m' | '<n>h' | '<n>d' to milliseconds; null when malformed. */
export function parseRetryInterval(value: string): number | null {
  if (value === 'immediate') return 0;
  const match = /^([1-9]\d{0,3})([mhd])$/.exec(value);
  return match ? Number(match[1]) * units[match[2]!]! : null;
}

/** Why a policy is unusable, or null. Intervals must grow and the first must be `immediate`. */
export function retryPolicyProblem(policy: RetryPolicy): string | null {
  if (!Number.isInteger(policy.max_attempts) || policy.max_attempts < 1 || policy.max_attempts > 10)
    return 'max_attempts must be an integer from 1 to 10';
  if (policy.intervals.length !== policy.max_attempts) return 'intervals must have max_attempts entries';
  const offsets = policy.intervals.map(parseRetryInterval);
  if (offsets.some((o) => o === null)) return 'each interval is "immediate" or a number with m, h or d (e.g. 24h, 3d)';
  if (offsets[0] !== 0) return 'the first interval must be "immediate" (it is the failed charge itself)';
  for (let i = 1; i < offsets.length; i++) if (offsets[i]! <= offsets[i - 1]!) return 'intervals must increase';
  if (offsets.at(-1)! > 60 * units.d!) return 'the last retry must come within 60 days';
  return null;
}

/** When scheduled attempt `attempt` (1-based) happens, or null past the last one. */
export function scheduledAttemptAt(policy: RetryPolicy, firstFailedAt: Date, attempt: number): Date | null {
  if (attempt > policy.max_attempts) return null;
  return new Date(firstFailedAt.getTime() + parseRetryInterval(policy.intervals[attempt - 1]!)!);
}
