/**
 * Renewal spreading (RENEWAL_SPREAD_MINUTES, docs/scaling.md): calendar billing puts
 * every monthly subscription of a deployment on the 1st at midnight; with a window
 * set, each subscription renews at the boundary plus a stable offset of its own, so
 * a million renewals arrive over the window instead of at one instant.
 *
 * Pure: the offset is a hash of the subscription id (FNV-1a, 32 bits) modulo the
 * window, so it is the same on every run, every replay and every worker, and needs
 * nothing the workflow sandbox lacks (no node:crypto).
 */

/** The largest window a deployment may set: half a day, well inside the shortest calendar period (a day). */
export const maxRenewalSpreadMinutes = 720;

/** 32-bit FNV-1a of the string's UTF-16 code units. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * The offset of `subscriptionId`'s renewals within a window of `windowMinutes`,
 * in milliseconds, in [0, window) and on whole seconds; 0 when the window is 0 (off).
 */
export function renewalOffsetMs(subscriptionId: string, windowMinutes: number): number {
  if (!Number.isInteger(windowMinutes) || windowMinutes < 0 || windowMinutes > maxRenewalSpreadMinutes) {
    throw new RangeError(
      `The renewal spread window must be an integer from 0 to ${maxRenewalSpreadMinutes} minutes, not ${windowMinutes}.`,
    );
  }
  if (windowMinutes === 0) return 0;
  return (fnv1a32(subscriptionId) % (windowMinutes * 60)) * 1000;
}
