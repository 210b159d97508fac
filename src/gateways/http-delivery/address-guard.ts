/**
 * Which addresses outbound deliveries may connect to. Customer-supplied URLs must not reach the
 * platform's own network: loopback, private (RFC 1918), carrier-grade NAT, link-local, unique-local,
 * multicast, unspecified and reserved ranges are refused, in IPv4 and IPv6, including IPv4 addresses
 * embedded in IPv6 (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`,
 * 6to4 `2002::/16`). The check is made on the resolved address the socket connects to.
 */
import dns from 'node:dns';
import net from 'node:net';

const V4_BLOCKED: [number, number][] = [
  [0x00000000, 8], // 0.0.0.0/8 "this network"
  [0x0a000000, 8], // 10/8 private
  [0x64400000, 10], // 100.64/10 carrier-grade NAT
  [0x7f000000, 8], // 127/8 loopback
  [0xa9fe0000, 16], // 169.254/16 link-local (cloud metadata)
  [0xac100000, 12], // 172.16/12 private
  [0xc0000000, 24], // 192.0.0/24 IETF protocol assignments
  [0xc0000200, 24], // 192.0.2/24 documentation
  [0xc0a80000, 16], // 192.168/16 private
  [0xc6120000, 15], // 198.18/15 benchmarking
  [0xc6336400, 24], // 198.51.100/24 documentation
  [0xcb007100, 24], // 203.0.113/24 documentation
  [0xe0000000, 4], // 224/4 multicast
  [0xf0000000, 4], // 240/4 reserved, broadcast
];

function v4ToInt(a: string): number | null {
  const parts = a.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n >>> 0;
}

function v4Blocked(n: number): boolean {
  return V4_BLOCKED.some(([base, bits]) => (bits === 0 ? true : (n >>> (32 - bits)) === base >>> (32 - bits)));
}

/** The eight 16-bit groups of an IPv6 address, or null when it is not one. */
function v6Groups(a: string): number[] | null {
  let s = a.toLowerCase().replace(/%.*$/, '');
  // A dotted IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = v4ToInt(tail);
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parse = (h: string) => (h === '' ? [] : h.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  let groups = head;
  if (halves.length === 2) {
    const rest = parse(halves[1]!);
    const fill = 8 - head.length - rest.length;
    if (fill < 1) return null;
    groups = [...head, ...new Array<number>(fill).fill(0), ...rest];
  }
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g))) return null;
  return groups;
}

function v6Blocked(g: number[]): boolean {
  const embedded = (hi: number, lo: number) => v4Blocked(((hi << 16) | lo) >>> 0);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return true; // :: unspecified
  if (zeros(0, 7) && g[7] === 1) return true; // ::1 loopback
  if (zeros(0, 5) && g[5] === 0xffff) return embedded(g[6]!, g[7]!); // ::ffff:a.b.c.d IPv4-mapped
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return embedded(g[6]!, g[7]!); // ::ffff:0:a.b.c.d IPv4-translated
  if (zeros(0, 6)) return embedded(g[6]!, g[7]!); // ::a.b.c.d IPv4-compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return embedded(g[6]!, g[7]!); // 64:ff9b::/96 NAT64
  if (g[0] === 0x2002) return embedded(g[1]!, g[2]!); // 2002::/16 6to4
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique-local
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // ff00::/8 multicast
  if (first === 0x2001 && g[1] === 0x0db8) return true; // 2001:db8::/32 documentation
  if (first === 0x0100 && zeros(1, 4)) return true; // 100::/64 discard
  return false;
}

/** True when `address` (an IP literal) is one that deliveries must not reach. Non-IPs count as blocked. */
export function isBlockedAddress(address: string): boolean {
  const kind = net.isIP(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  if (kind === 4) return v4Blocked(v4ToInt(address)!);
  if (kind === 6) {
    const g = v6Groups(address.replace(/^\[|\]$/g, ''));
    return g === null ? true : v6Blocked(g);
  }
  return true;
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
