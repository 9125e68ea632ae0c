/**
 * When webhook deliveries are attempted, and when an endpoint is given up on.
 * No imports: the delivery workflow (deterministic code) reads these too.
 */
const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;

/**
 * Waits between attempts, after attempt n (index n-1). The first attempt goes
 * at once; the schedules end exactly at the disable windows below.
 *
 * Live: 5 s, 5 min, 30 min, 2 h, 5 h, then every 10 h, and a last wait of
 * 4 h 24 min 55 s so the 13th and last attempt comes exactly 3 days after the first.
 * Sandbox: 5 s, 1 min, 5 min, 15 min, 30 min, and 8 min 55 s: 7 attempts in 1 hour.
 */
export const retrySchedules = {
  live: [
    5 * second,
    5 * minute,
    30 * minute,
    2 * hour,
    5 * hour,
    10 * hour,
    10 * hour,
    10 * hour,
    10 * hour,
    10 * hour,
    10 * hour,
    4 * hour + 24 * minute + 55 * second,
  ],
  sandbox: [5 * second, 1 * minute, 5 * minute, 15 * minute, 30 * minute, 8 * minute + 55 * second],
} as const;

/** An endpoint whose deliveries have failed without a success in between for this long is disabled. */
export const disableAfterMs = { live: 72 * hour, sandbox: 1 * hour } as const;

/** Old and new secrets both sign during this window after a rotation. */
export const secretRotationOverlapMs = 24 * hour;

/** One HTTP attempt: connect, send, and receive the response headers and the first bytes within this. */
export const deliveryTimeoutMs = 10 * second;

/** How much of a response body an attempt keeps. */
export const responseBodyLimitBytes = 1024;

export function retrySchedule(livemode: boolean): readonly number[] {
  return livemode ? retrySchedules.live : retrySchedules.sandbox;
}

export function disableWindowMs(livemode: boolean): number {
  return livemode ? disableAfterMs.live : disableAfterMs.sandbox;
}

/** Offsets of every attempt from the first one (ms), for documentation and tests. */
export function attemptOffsets(livemode: boolean): number[] {
  const offsets = [0];
  for (const wait of retrySchedule(livemode)) offsets.push(offsets.at(-1)! + wait);
  return offsets;
}
