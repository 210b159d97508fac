/**
 * SIP messages (RFC 3261 section 7): parsing and serializing. Parsing never throws: it answers a
 * message or a reason the input is not one, so garbage from the network cannot reach past the
 * listener. Sizes are bounded (MAX_MESSAGE_BYTES, MAX_HEADERS) before any work is done on them.
 */

/** Larger than any call-control message we expect (an INVITE with SDP is ~1-2 KiB); bounds a flood's cost. */
export const MAX_MESSAGE_BYTES = 16 * 1024;
export const MAX_HEADERS = 80;

/** Header names in their long, lower-case form; order is kept as received. */
export type Headers = Array<[string, string]>;

export interface SipRequest {
  kind: 'request';
  method: string;
  uri: string;
  headers: Headers;
  body: string;
}

export interface SipResponse {
  kind: 'response';
  status: number;
  reason: string;
  headers: Headers;
  body: string;
}

export type SipMessage = SipRequest | SipResponse;

export type Parsed = { ok: true; message: SipMessage } | { ok: false; reason: string; /** the start line and headers parsed, when a 400 can be answered */ partial?: SipRequest };

const COMPACT: Record<string, string> = {
  i: 'call-id', m: 'contact', e: 'content-encoding', l: 'content-length', c: 'content-type',
  f: 'from', s: 'subject', k: 'supported', t: 'to', v: 'via', o: 'event', r: 'refer-to', b: 'referred-by',
};

const CANONICAL: Record<string, string> = {
  'call-id': 'Call-ID', cseq: 'CSeq', 'www-authenticate': 'WWW-Authenticate', 'x-ivr-data': 'X-IVR-Data',
  'p-asserted-identity': 'P-Asserted-Identity', 'mime-version': 'MIME-Version',
};

const TOKEN = /^[A-Za-z0-9.!%*_+`'~-]+$/;

export const headerName = (raw: string): string => {
  const n = raw.trim().toLowerCase();
  return COMPACT[n] ?? n;
};

/** Names already made canonical: a few dozen in practice, bounded so a peer's odd names cannot grow it. */
const canonicalMade = new Map<string, string>();
const MAX_CANONICAL_MADE = 256;

const canonical = (name: string): string => {
  const known = Object.hasOwn(CANONICAL, name) ? CANONICAL[name] : canonicalMade.get(name);
  if (known !== undefined) return known;
  const made = name.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase());
  if (canonicalMade.size < MAX_CANONICAL_MADE) canonicalMade.set(name, made);
  return made;
};

/** The first value of a header (comma-separated values of a list header are not split here). */
export function header(m: SipMessage, name: string): string | undefined {
  for (const [n, v] of m.headers) if (n === name) return v;
  return undefined;
}

/** Every value of a list header (Via, Contact, Route...), split at commas outside quotes and <>. */
export function headerValues(m: SipMessage, name: string): string[] {
  const out: string[] = [];
  for (const [n, v] of m.headers) if (n === name) out.push(...splitList(v));
  return out;
}

export function splitList(v: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < v.length; i++) {
    const ch = v[i];
    if (ch === '\\' && quoted) i++;
    else if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === '<') depth++;
    else if (!quoted && ch === '>') depth = Math.max(0, depth - 1);
    else if (!quoted && depth === 0 && ch === ',') {
      out.push(v.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = v.slice(start).trim();
  if (last) out.push(last);
  return out;
}

/** Header lines and the offset where the body starts; null when the header section is not complete. */
export function headerEnd(text: string): { end: number; bodyStart: number } | null {
  const crlf = text.indexOf('\r\n\r\n');
  const lf = text.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { end: crlf, bodyStart: crlf + 4 };
  if (lf >= 0) return { end: lf, bodyStart: lf + 2 };
  return null;
}

/**
 * Parses one message. `stream`: the bytes are exactly one framed message from TCP (Content-Length
 * required); otherwise a datagram, whose body is what follows the headers, cut to Content-Length.
 */
export function parseMessage(buf: Buffer, stream = false): Parsed {
  if (buf.length > MAX_MESSAGE_BYTES) return { ok: false, reason: 'message too large' };
  // latin1 maps bytes 1:1, so offsets below are byte offsets (Content-Length counts bytes).
  const text = buf.toString('latin1').replace(/^(\r?\n)+/, '');
  const he = headerEnd(text);
  if (!he) return { ok: false, reason: 'no end of headers' };
  const lines = text.slice(0, he.end).split(/\r?\n/);
  const start = lines.shift() ?? '';
  const headers: Headers = [];
  for (const line of lines) {
    if (/^[ \t]/.test(line)) {
      // A folded continuation line belongs to the header before it.
      const prev = headers[headers.length - 1];
      if (!prev) return { ok: false, reason: 'continuation without header' };
      prev[1] = `${prev[1]} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) return { ok: false, reason: 'malformed header line' };
    const name = headerName(line.slice(0, colon));
    if (!TOKEN.test(name)) return { ok: false, reason: 'malformed header name' };
    headers.push([name, line.slice(colon + 1).trim()]);
    if (headers.length > MAX_HEADERS) return { ok: false, reason: 'too many headers' };
  }
  let body = text.slice(he.bodyStart);
  const cl = headers.find(([n]) => n === 'content-length')?.[1];
  if (cl !== undefined) {
    if (!/^\d{1,6}$/.test(cl)) return { ok: false, reason: 'bad Content-Length' };
    const n = Number(cl);
    if (n > body.length) return { ok: false, reason: 'body shorter than Content-Length' };
    body = body.slice(0, n);
  } else if (stream) return { ok: false, reason: 'Content-Length required on a stream' };
  body = Buffer.from(body, 'latin1').toString('utf8');

  const resp = /^SIP\/2\.0 ([1-6]\d\d)(?: (.*))?$/.exec(start);
  if (resp) {
    const m: SipResponse = { kind: 'response', status: Number(resp[1]), reason: resp[2] ?? '', headers, body };
    const bad = missing(m);
    return bad ? { ok: false, reason: bad } : { ok: true, message: m };
  }
  const req = /^([A-Za-z0-9.!%*_+`'~-]+) (\S+) SIP\/2\.0$/.exec(start);
  if (!req) return { ok: false, reason: 'malformed start line' };
  const m: SipRequest = { kind: 'request', method: req[1]!, uri: req[2]!, headers, body };
  const bad = missing(m);
  if (bad) return { ok: false, reason: bad, partial: m };
  const cseq = parseCSeq(header(m, 'cseq')!);
  if (!cseq) return { ok: false, reason: 'bad CSeq', partial: m };
  if (cseq.method !== m.method && !(m.method === 'ACK' && cseq.method === 'ACK')) return { ok: false, reason: 'CSeq method does not match', partial: m };
  if (!parseUri(m.uri)) return { ok: false, reason: 'bad Request-URI', partial: m };
  return { ok: true, message: m };
}

function missing(m: SipMessage): string | null {
  for (const h of ['via', 'from', 'to', 'call-id', 'cseq']) if (header(m, h) === undefined) return `missing ${canonical(h)}`;
  const via = parseVia(headerValues(m, 'via')[0] ?? '');
  if (!via) return 'bad Via';
  if (!parseCSeq(header(m, 'cseq')!)) return 'bad CSeq';
  if (!parseNameAddr(header(m, 'from')!) || !parseNameAddr(header(m, 'to')!)) return 'bad From or To';
  return null;
}

export function serialize(m: SipMessage): Buffer {
  const start = m.kind === 'request' ? `${m.method} ${m.uri} SIP/2.0` : `SIP/2.0 ${m.status} ${m.reason}`;
  const body = Buffer.from(m.body, 'utf8');
  const lines = [start];
  for (const [n, v] of m.headers) if (n !== 'content-length') lines.push(`${canonical(n)}: ${v}`);
  lines.push(`Content-Length: ${body.length}`, '', '');
  const head = lines.join('\r\n');
  return body.length === 0 ? Buffer.from(head, 'utf8') : Buffer.concat([Buffer.from(head, 'utf8'), body]);
}

// --- header values ------------------------------------------------------------------------------

export interface Via {
  transport: string;
  host: string;
  port: number | null;
  params: Map<string, string>;
}

export function parseVia(v: string): Via | null {
  const m = /^SIP\s*\/\s*2\.0\s*\/\s*([A-Za-z]+)\s+([^;\s]+)\s*(.*)$/.exec(v.trim());
  if (!m) return null;
  const hp = splitHostPort(m[2]!);
  if (!hp) return null;
  return { transport: m[1]!.toUpperCase(), host: hp.host, port: hp.port, params: parseParams(m[3]!) };
}

export function parseParams(s: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const part of s.split(';')) {
    const p = part.trim();
    if (!p) continue;
    const eq = p.indexOf('=');
    if (eq < 0) params.set(p.toLowerCase(), '');
    else params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1'));
  }
  return params;
}

export function splitHostPort(s: string): { host: string; port: number | null } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m) return null;
  const port = m[2] === undefined ? null : Number(m[2]);
  if (port !== null && (port < 1 || port > 65535)) return null;
  return { host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

export interface SipUri {
  scheme: 'sip' | 'sips';
  user: string | null;
  host: string;
  port: number | null;
  params: Map<string, string>;
}

export function parseUri(s: string): SipUri | null {
  const m = /^(sips?):(?:([^@;?]+)@)?([^;?]+)([^?]*)(?:\?.*)?$/i.exec(s.trim());
  if (!m) return null;
  const hp = splitHostPort(m[3]!);
  if (!hp) return null;
  // The user part may carry a password (user:pw); only the user is kept.
  const user = m[2] === undefined ? null : decodeUser(m[2].split(':')[0]!);
  return { scheme: m[1]!.toLowerCase() as 'sip' | 'sips', user, host: hp.host, port: hp.port, params: parseParams(m[4]!) };
}

function decodeUser(u: string): string {
  try {
    return decodeURIComponent(u);
  } catch {
    return u;
  }
}

export interface NameAddr {
  display: string;
  uri: string;
  params: Map<string, string>;
}

/** `"Name" <sip:...>;tag=x` or `sip:...;tag=x` (then the parameters are the header's, RFC 3261 20.10). */
export function parseNameAddr(s: string): NameAddr | null {
  const v = s.trim();
  const lt = v.indexOf('<');
  if (lt >= 0) {
    const gt = v.indexOf('>', lt);
    if (gt < 0) return null;
    const uri = v.slice(lt + 1, gt).trim();
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri)) return null;
    return { display: v.slice(0, lt).trim().replace(/^"(.*)"$/, '$1'), uri, params: parseParams(v.slice(gt + 1)) };
  }
  const semi = v.indexOf(';');
  const uri = (semi < 0 ? v : v.slice(0, semi)).trim();
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(uri)) return null;
  return { display: '', uri, params: parseParams(semi < 0 ? '' : v.slice(semi)) };
}

export function parseCSeq(s: string): { seq: number; method: string } | null {
  const m = /^(\d{1,10})\s+([A-Za-z0-9.!%*_+`'~-]+)$/.exec(s.trim());
  if (!m) return null;
  const seq = Number(m[1]);
  return seq < 2 ** 31 ? { seq, method: m[2]! } : null;
}

/** The tag parameter of a From or To header. */
export const tagOf = (v: string | undefined): string | null => (v ? (parseNameAddr(v)?.params.get('tag') ?? null) : null);

/** The user part of the URI in a From, To or P-Asserted-Identity header. */
export function userOf(v: string | undefined): string | null {
  const na = v ? parseNameAddr(v) : null;
  if (!na) return null;
  if (/^tel:/i.test(na.uri)) return na.uri.slice(4).split(';')[0] ?? null;
  return parseUri(na.uri)?.user ?? null;
}
