/**
 * HTTP requests byte for byte as given (raw path, headers, body), for tests of hostile input that
 * fetch would refuse or normalise. One connection per request; a deadline bounds each.
 */
import http from 'node:http';
import net from 'node:net';

export interface RawRequest {
  method: string;
  /** Sent as is: may hold bad percent-encoding, be very long, etc. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Sends this Content-Length instead of the body's (a truncated body when larger). */
  contentLength?: number;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * A request whose body is shorter than its Content-Length, after which the client ends its side
 * of the connection: the server sees a truncated body. Resolves with the answer, or status 0 when
 * the server closed without one (there is nobody left to answer).
 */
function truncatedRequest(u: URL, r: RawRequest, timeoutMs: number): Promise<RawResponse> {
  const head = [`${r.method} ${r.path} HTTP/1.1`, `host: ${u.host}`, 'connection: close', `content-length: ${r.contentLength}`, ...Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
  const bytes = r.body === undefined ? `${head}\r\n\r\n` : Buffer.concat([Buffer.from(`${head}\r\n\r\n`), Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body)]);
  return rawBytes(u.href, bytes, timeoutMs, `${r.method} ${r.path.slice(0, 100)}`);
}

/**
 * Sends `bytes` as they are on a new connection (nothing checked or added: a malformed request
 * line or header, any Expect), ends the client's side (unless `halfClose` is false: then the request
 * must ask for `connection: close`), and reads until the server closes. Resolves with the first
 * final answer (`interim`: the statuses of 1xx answers before it, as 100 Continue), or status 0 when
 * the server closed without one.
 */
export function rawBytes(baseUrl: string, bytes: string | Buffer, timeoutMs = 10_000, what = 'raw bytes', halfClose = true): Promise<RawResponse & { interim: number[] }> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: u.hostname, port: Number(u.port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms: ${what}`));
    }, timeoutMs);
    sock.on('connect', () => {
      sock.write(bytes);
      if (halfClose) sock.end();
    });
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', () => {});
    sock.on('close', () => {
      clearTimeout(timer);
      let raw = Buffer.concat(chunks).toString('utf8');
      const interim: number[] = [];
      for (let i1 = /^HTTP\/1\.1 (1\d\d)[^\r]*\r\n\r\n/.exec(raw); i1; i1 = /^HTTP\/1\.1 (1\d\d)[^\r]*\r\n\r\n/.exec(raw)) {
        interim.push(Number(i1[1]));
        raw = raw.slice(i1[0].length);
      }
      const m = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(raw);
      if (!m) return resolve({ status: 0, headers: {}, text: raw, interim });
      const headers: http.IncomingHttpHeaders = {};
      for (const line of m[2]!.split('\r\n')) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const length = Number(headers['content-length']);
      resolve({ interim, status: Number(m[1]), headers, text: Number.isFinite(length) ? Buffer.from(m[3]!).subarray(0, length).toString('utf8') : m[3]! });
    });
  });
}

export function rawRequest(baseUrl: string, r: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  const u = new URL(baseUrl);
  const bodyLength = r.body === undefined ? 0 : Buffer.byteLength(r.body);
  if (r.contentLength !== undefined && r.contentLength > bodyLength) return truncatedRequest(u, r, timeoutMs);
  return new Promise((resolve, reject) => {
    const body = r.body === undefined ? undefined : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body, 'utf8');
    const headers: Record<string, string | number> = { ...r.headers };
    if (body !== undefined || r.contentLength !== undefined) headers['content-length'] = r.contentLength ?? body!.length;
    const req = http.request({ host: u.hostname, port: u.port, method: r.method, path: r.path, headers, agent: false, insecureHTTPParser: false });
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs} ms: ${r.method} ${r.path.slice(0, 100)}`));
    }, timeoutMs);
    req.on('response', (res) => {
      // An accepted event stream (GET /api/v1/events) never ends by itself: its headers are the answer.
      if (res.statusCode === 200 && String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: 200, headers: res.headers, text: '' });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** The contract's error body, or a description of what is wrong with the answer. */
export function errorBodyProblem(res: RawResponse): string | null {
  if (res.status === 0) return null; // closed without an answer: only for a client that hung up mid-body
  if (res.status < 400) return null;
  if (res.status >= 500) return `status ${res.status}: ${res.text.slice(0, 300)}`;
  if (!String(res.headers['content-type'] ?? '').startsWith('application/json')) return `status ${res.status} with content-type ${res.headers['content-type']}: ${res.text.slice(0, 200)}`;
  try {
    const b = JSON.parse(res.text);
    if (b.isError !== true || typeof b.code !== 'string' || typeof b.message !== 'string' || Object.keys(b).length !== 3) return `status ${res.status} without the error body: ${res.text.slice(0, 200)}`;
  } catch {
    return `status ${res.status} with a body that is not JSON: ${res.text.slice(0, 200)}`;
  }
  return null;
}
