/**
 * Where webhooks may be sent (SSRF rules). Checked when an endpoint is created
 * or its url changed, and again before every attempt, on the addresses the name
 * resolves to then (against DNS rebinding); the attempt then connects to the
 * address that was checked, never resolving the name a second time.
 *
 * Live mode: https only, and no address of the name may be loopback, private
 * (RFC 1918), shared/CGNAT (100.64/10), link-local (169.254/16, fe80::/10, so no
 * cloud metadata endpoint), unspecified, multicast, broadcast/reserved,
 * documentation or benchmarking ranges, or IPv6 unique-local (fc00::/7); IPv4
 * inside IPv6 (::ffff:a.b.c.d in any spelling, 64:ff9b::a.b.c.d, ::a.b.c.d, and the
 * 6to4 prefix 2002:a.b.c.d::/48) is judged as IPv4; the local-use NAT64 prefix
 * 64:ff9b:1::/48 is refused outright (it reaches networks the operator translates to).
 * Sandbox: http or https. With `sandboxPrivateNetworks` (development and test)
 * loopback and private networks are allowed (a receiver on the developer's
 * machine); without it (NODE_ENV=production) sandbox follows live's address rules
 * except for the hosts, addresses and CIDRs the operator lists in
 * WEBHOOK_ALLOWED_PRIVATE_HOSTS, which may be loopback or private (never
 * link-local, unspecified, multicast or reserved).
 * Both: no user:password, no control characters in the url, at most 2048 characters.
 * Refusals never say what a name resolves to.
 *
 * The rules only: no I/O here. Resolving the name and checking what it resolves to is
 * services/webhooks/url-check.ts (checkWebhookUrl).
 */
import { isIP } from 'node:net';

export type AddressKind = 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Name → addresses (services/webhooks/url-check.ts systemResolver; tests inject their own). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export class UrlNotAllowedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UrlNotAllowedError';
  }
}

const v4Ranges: [string, number, AddressKind][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'reserved'], // documentation
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['198.51.100.0', 24, 'reserved'], // documentation
  ['203.0.113.0', 24, 'reserved'], // documentation
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // and 255.255.255.255, broadcast
];

const v6Ranges: [string, number, AddressKind][] = [
  ['::', 128, 'unspecified'],
  ['64:ff9b:1::', 48, 'reserved'], // local-use NAT64 (RFC 8215): translates into the operator's networks
  ['::1', 128, 'loopback'],
  ['100::', 64, 'reserved'], // discard
  ['2001:db8::', 32, 'reserved'], // documentation
  ['fc00::', 7, 'private'], // unique local
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'private'], // site-local (deprecated)
  ['ff00::', 8, 'multicast'],
];

function v4Bytes(ip: string): number[] {
  return ip.split('.').map(Number);
}

/** An IPv6 address as 16 bytes (handles `::` and a dotted IPv4 tail). */
function v6Bytes(ip: string): number[] {
  let text = ip.toLowerCase().split('%')[0]!;
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    tail = v4Bytes(dotted[1]!);
    text = text.slice(0, -dotted[1]!.length) + '0:0';
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groups = (s: string) => (s ? s.split(':').filter((g) => g !== '') : []);
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const missing = 8 - left.length - right.length;
  const all = [...left, ...Array(rest === undefined ? 0 : missing).fill('0'), ...right].map((g) => parseInt(g, 16));
  const bytes = all.flatMap((g) => [(g >> 8) & 0xff, g & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function inRange(bytes: number[], base: number[], prefix: number): boolean {
  for (let bit = 0; bit < prefix; bit++) {
    const i = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((bytes[i]! & mask) !== (base[i]! & mask)) return false;
  }
  return true;
}

/** What kind of special address `ip` is, or null for an ordinary public address. */
export function classifyAddress(ip: string): AddressKind | null {
  const family = isIP(ip.split('%')[0]!);
  if (family === 4) {
    const bytes = v4Bytes(ip);
    for (const [base, prefix, kind] of v4Ranges) if (inRange(bytes, v4Bytes(base), prefix)) return kind;
    return null;
  }
  if (family === 6) {
    const bytes = v6Bytes(ip);
    const embeddedV4 = bytes.slice(12).join('.');
    const zero = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
    // ::ffff:a.b.c.d (mapped), 64:ff9b::a.b.c.d (NAT64), ::a.b.c.d (compatible, but not :: or ::1)
    if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return classifyAddress(embeddedV4);
    // ::ffff:0:a.b.c.d (IPv4-translated, RFC 2765): also an IPv4 address in disguise.
    if (zero(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zero(10, 12)) return classifyAddress(embeddedV4);
    if (inRange(bytes, v6Bytes('64:ff9b::'), 96)) return classifyAddress(embeddedV4);
    if (zero(0, 12) && !zero(12, 15)) return classifyAddress(embeddedV4);
    // 6to4 (2002:a.b.c.d::/48): a relay delivers it to the embedded IPv4 address.
    if (bytes[0] === 0x20 && bytes[1] === 0x02) {
      const kind = classifyAddress(bytes.slice(2, 6).join('.'));
      if (kind) return kind;
    }
    for (const [base, prefix, kind] of v6Ranges) if (inRange(bytes, v6Bytes(base), prefix)) return kind;
    return null;
  }
  return 'reserved'; // not an address at all
}

const sandboxAllowed = new Set<AddressKind>(['loopback', 'private']);

/** What the operator allows sandbox endpoints beyond live's rules (config.ts builds it from the environment). */
export interface WebhookUrlPolicy {
  /** Sandbox endpoints may target any loopback or private address (development and test; off when NODE_ENV=production). */
  sandboxPrivateNetworks: boolean;
  /** Host names, IP addresses and CIDRs (`10.1.0.0/16`) sandbox endpoints may target although loopback or private. */
  allowedPrivateHosts: readonly string[];
}

/** Development's rules: the sandbox may reach this machine and private networks. */
export const developmentUrlPolicy: WebhookUrlPolicy = { sandboxPrivateNetworks: true, allowedPrivateHosts: [] };
/** Production's rules without exceptions: sandbox follows live's address rules. */
export const strictUrlPolicy: WebhookUrlPolicy = { sandboxPrivateNetworks: false, allowedPrivateHosts: [] };

/** Null when `entry` is a valid WEBHOOK_ALLOWED_PRIVATE_HOSTS entry (host name, IP, or IP/prefix), else why not. */
export function allowEntryProblem(entry: string): string | null {
  const [ip, prefix, extra] = entry.split('/');
  if (extra !== undefined) return `"${entry}" is not a host name, an IP address or a CIDR`;
  if (prefix !== undefined) {
    const family = isIP(ip!);
    const bits = Number(prefix);
    if (!family || !/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128))
      return `"${entry}" is not a valid CIDR`;
    return null;
  }
  if (isIP(entry)) return null;
  return /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/i.test(entry)
    ? null
    : `"${entry}" is not a host name, an IP address or a CIDR`;
}

function addressBytes(ip: string): number[] {
  return isIP(ip) === 4 ? v4Bytes(ip) : v6Bytes(ip);
}

/** Whether the operator listed this host name, or an address or CIDR holding this address. */
function operatorAllows(policy: WebhookUrlPolicy, hostname: string, ip: string): boolean {
  const host = hostname.toLowerCase();
  for (const entry of policy.allowedPrivateHosts) {
    const [base, prefix] = entry.split('/');
    if (prefix === undefined) {
      if (entry.toLowerCase() === host) return true;
      if (isIP(entry) && isIP(entry) === isIP(ip) && addressBytes(entry).join('.') === addressBytes(ip).join('.'))
        return true;
      continue;
    }
    if (isIP(base!) === isIP(ip) && inRange(addressBytes(ip), addressBytes(base!), Number(prefix))) return true;
  }
  return false;
}

/**
 * Null when `ip` may receive webhooks in this mode, else its kind. `hostname` is the
 * url's host (for the operator's list of allowed names).
 */
export function addressKindRefused(
  ip: string,
  livemode: boolean,
  policy: WebhookUrlPolicy = developmentUrlPolicy,
  hostname: string = ip,
): AddressKind | null {
  const kind = classifyAddress(ip);
  if (kind === null) return null;
  if (!livemode && sandboxAllowed.has(kind) && (policy.sandboxPrivateNetworks || operatorAllows(policy, hostname, ip)))
    return null;
  return kind;
}

/** Null when `ip` may receive webhooks in this mode, else why not. */
export function addressRefusal(
  ip: string,
  livemode: boolean,
  policy: WebhookUrlPolicy = developmentUrlPolicy,
): string | null {
  const kind = addressKindRefused(ip, livemode, policy);
  return kind === null ? null : `${ip} is a ${kind} address`;
}

export interface CheckedUrl {
  url: URL;
  /** The host without IPv6 brackets. */
  hostname: string;
  /** Every address checked (the literal itself for an IP url); connect to these only. */
  addresses: ResolvedAddress[];
}

/** A url's shape, before its name is resolved: what the checks of the url itself let through. */
export interface ParsedWebhookUrl {
  url: URL;
  /** The host without IPv6 brackets. */
  hostname: string;
  /** The address when the host is an IP literal (nothing to resolve), else null. */
  literal: ResolvedAddress | null;
}

/** The checks of the url itself (length, characters, scheme, credentials): throws UrlNotAllowedError with the reason. */
export function parseWebhookUrl(raw: string, livemode: boolean): ParsedWebhookUrl {
  if (raw.length > 2048) throw new UrlNotAllowedError('url is longer than 2048 characters');
  // The URL parser would drop tabs and newlines silently; a url is stored as sent, so refuse them.
  if (/[\u0000-\u001f\u007f]/.test(raw))
    throw new UrlNotAllowedError('url may not contain control characters (CR, LF, tab, NUL...)');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlNotAllowedError('url is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UrlNotAllowedError('url must be http or https');
  if (livemode && url.protocol !== 'https:') throw new UrlNotAllowedError('live mode webhook urls must use https');
  if (url.username || url.password) throw new UrlNotAllowedError('url may not contain a user name or password');
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const literal = isIP(hostname);
  return { url, hostname, literal: literal ? { address: hostname, family: literal === 6 ? 6 : 4 } : null };
}

/** Why a url with no address, or a name that did not resolve, is refused. */
export function unresolvedRefusal(hostname: string, code?: string): UrlNotAllowedError {
  return new UrlNotAllowedError(`${hostname} does not resolve${code && /^[A-Z_]+$/.test(code) ? ` (${code})` : ''}`);
}

/** Throws UrlNotAllowedError when any address the url's host has may not receive webhooks in this mode. */
export function checkAddresses(
  parsed: ParsedWebhookUrl,
  addresses: ResolvedAddress[],
  livemode: boolean,
  policy: WebhookUrlPolicy = developmentUrlPolicy,
): CheckedUrl {
  const { url, hostname, literal } = parsed;
  if (addresses.length === 0) throw unresolvedRefusal(hostname);
  const mode = livemode ? 'live mode' : 'sandbox';
  for (const { address } of addresses) {
    const kind = addressKindRefused(address, livemode, policy, hostname);
    if (kind === null) continue;
    // An address the caller typed may be named; what a name resolves to is not told (it maps internal networks).
    if (literal) throw new UrlNotAllowedError(`${address} is a ${kind} address, which ${mode} webhooks may not target`);
    throw new UrlNotAllowedError(
      `${hostname} resolves to an address ${mode} webhooks may not target (loopback, private, link-local or reserved)`,
    );
  }
  return { url, hostname, addresses };
}
