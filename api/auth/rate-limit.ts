/**
 * At most `limit` hits per key in any `windowMs`, counted in this process's memory
 * (a restart forgets; N API processes allow N × limit). Used for unauthenticated
 * sign-ups per IP (docs/security.md). Bounded: expired keys are dropped as it grows.
 */
export class SlidingWindowLimiter {
  private readonly hits = new Map<string, number[]>();
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly maxKeys: number;
  constructor(limit: number, windowMs: number, maxKeys = 50_000) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.maxKeys = maxKeys;
  }

  /** Records a hit and returns 0, or returns the seconds until the key may try again (nothing recorded). */
  take(key: string, now = Date.now()): number {
    const since = now - this.windowMs;
    const recent = (this.hits.get(key) ?? []).filter((t) => t > since);
    if (recent.length >= this.limit) {
      this.hits.set(key, recent);
      return Math.max(1, Math.ceil((recent[0]! + this.windowMs - now) / 1000));
    }
    recent.push(now);
    this.hits.set(key, recent);
    if (this.hits.size > this.maxKeys) this.prune(since);
    return 0;
  }

  private prune(since: number): void {
    for (const [key, times] of this.hits) if (!times.some((t) => t > since)) this.hits.delete(key);
    // Still too many live keys: forget the oldest (a flood of distinct IPs must not exhaust memory).
    for (const key of this.hits.keys()) {
      if (this.hits.size <= this.maxKeys) break;
      this.hits.delete(key);
    }
  }
}
