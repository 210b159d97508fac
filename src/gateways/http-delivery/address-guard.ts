/**
 * Which addresses outbound deliveries may connect to. Customer-supplied URLs must not reach the
 * platform's own network: every special-purpose range ipaddr.js knows (loopback, private, carrier-grade
 * NAT, link-local, unique-local, multicast, unspecified, documentation, benchmarking, Teredo and other
 * reserved ones) is refused, in IPv4 and IPv6, and IPv6 addresses that carry an IPv4 one (IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-translated, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`)
 * are judged by it. The check is made on the resolved address the socket connects to.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * ipaddr.js names the special-purpose ranges (IANA's registries); every one but `unicast` is refused.
 * IPv6 forms that carry an IPv4 address are judged by that address instead.
 */
const EMBEDS_V4 = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4']);

function v4Blocked(a: ipaddr.IPv4): boolean {
  return a.range() !== 'unicast';
}

/** The IPv4 address an IPv6 one carries: in its last 32 bits, or after 2002: for 6to4. */
function embeddedV4(a: ipaddr.IPv6, range: string): ipaddr.IPv4 {
  const [hi, lo] = range === '6to4' ? [a.parts[1]!, a.parts[2]!] : [a.parts[6]!, a.parts[7]!];
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

function v6Blocked(a: ipaddr.IPv6): boolean {
  const range = a.range();
  if (EMBEDS_V4.has(range)) return v4Blocked(embeddedV4(a, range));
  // ::a.b.c.d, IPv4-compatible (deprecated, and not among ipaddr.js's ranges).
  if (range === 'unicast' && a.parts.slice(0, 6).every((p) => p === 0)) return v4Blocked(embeddedV4(a, range));
  return range !== 'unicast';
}

/** True when `address` (an IP literal) is one that deliveries must not reach. Non-IPs count as blocked. */
export function isBlockedAddress(address: string): boolean {
  const literal = address.replace(/^\[|\]$/g, '');
  // Only the canonical forms a resolver hands out (ipaddr.js would also read `1.2.3` or octal parts).
  if (net.isIP(literal.replace(/%.*$/, '')) === 0 || !ipaddr.isValid(literal)) return true;
  const a = ipaddr.parse(literal);
  return a.kind() === 'ipv4' ? v4Blocked(a as ipaddr.IPv4) : v6Blocked(a as ipaddr.IPv6);
}

/** Raised when a target resolves only to refused addresses. */
export class RefusedTargetError extends Error {
  constructor(host: string, address: string) {
    super(`refused: ${host} resolves to ${address}, a loopback, private, link-local or otherwise non-public address (WEBHOOK_ALLOW_PRIVATE=false)`);
    this.name = 'RefusedTargetError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request / net.connect that resolves the name and hands the socket only
 * addresses that pass the guard, so the connection is made to a checked address (no second lookup
 * a rebinding DNS server could answer differently).
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const list = addresses as dns.LookupAddress[];
      const ok = allowPrivate ? list : list.filter((a) => !isBlockedAddress(a.address));
      if (ok.length === 0) {
        return callback(Object.assign(new RefusedTargetError(hostname, list.map((a) => a.address).join(', ') || 'nothing'), { code: 'EREFUSEDTARGET' }), '');
      }
      if (options.all) return callback(null, ok);
      return callback(null, ok[0]!.address, ok[0]!.family);
    });
  };
}
