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
 * inside IPv6 (::ffff:a.b.c.d, 64:ff9b::a.b.c.d, ::a.b.c.d) is judged as IPv4.
 * Sandbox: http or https, and loopback and private networks are allowed (a
 * receiver on the developer's machine), but link-local, unspecified, multicast
 * and reserved addresses are still refused.
 * Both: no user:password in the url, at most 2048 characters.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export type AddressKind = 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Name → addresses. The system's resolver by default; tests inject their own. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

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
    if (inRange(bytes, v6Bytes('64:ff9b::'), 96)) return classifyAddress(embeddedV4);
    if (zero(0, 12) && !zero(12, 15)) return classifyAddress(embeddedV4);
    for (const [base, prefix, kind] of v6Ranges) if (inRange(bytes, v6Bytes(base), prefix)) return kind;
    return null;
  }
  return 'reserved'; // not an address at all
}

const sandboxAllowed = new Set<AddressKind>(['loopback', 'private']);

/** Null when `ip` may receive webhooks in this mode, else why not. */
export function addressRefusal(ip: string, livemode: boolean): string | null {
  const kind = classifyAddress(ip);
  if (kind === null) return null;
  if (!livemode && sandboxAllowed.has(kind)) return null;
  return `${ip} is a ${kind} address`;
}

export interface CheckedUrl {
  url: URL;
  /** The host without IPv6 brackets. */
  hostname: string;
  /** Every address checked (the literal itself for an IP url); connect to these only. */
  addresses: ResolvedAddress[];
}

/** Throws UrlNotAllowedError with the reason, or returns the url and the addresses that were checked. */
export async function checkWebhookUrl(raw: string, livemode: boolean, resolve: Resolver = systemResolver): Promise<CheckedUrl> {
  if (raw.length > 2048) throw new UrlNotAllowedError('url is longer than 2048 characters');
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
  const mode = livemode ? 'live mode' : 'sandbox';
  const literal = isIP(hostname);
  let addresses: ResolvedAddress[];
  if (literal) {
    addresses = [{ address: hostname, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolve(hostname);
    } catch (error) {
      throw new UrlNotAllowedError(`${hostname} does not resolve (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
    if (addresses.length === 0) throw new UrlNotAllowedError(`${hostname} does not resolve`);
  }
  for (const { address } of addresses) {
    const refusal = addressRefusal(address, livemode);
    if (refusal) throw new UrlNotAllowedError(`${literal ? '' : `${hostname} resolves to ${address}: `}${refusal}, which ${mode} webhooks may not target`);
  }
  return { url, hostname, addresses };
}
