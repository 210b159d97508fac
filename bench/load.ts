/**
 * A small keep-alive HTTP/1.1 load generator: `connections` sockets, each sending one request,
 * reading the whole response, and sending the next, until the duration is over. It writes a
 * pre-built request and parses only the status line and the body length, so the generator costs
 * far less than the server it measures. Runs in a worker thread (load-worker.ts).
 */
import net from 'node:net';

export interface LoadTarget {
  /** http://host:port */
  url: string;
  method: string;
  path: string;
  /** Further paths: each connection sends `path`, then these, in turn (e.g. a toggle). */
  alternate?: string[];
  headers?: Record<string, string>;
  body?: string;
  /** Instead of path/alternate: connection i sends the paths of `perConnection[i % length]` in turn. */
  perConnection?: string[][];
}

export interface LoadOptions {
  connections: number;
  durationMs: number;
}

export interface LoadResult {
  requests: number;
  durationMs: number;
  rps: number;
  /** Responses by status class, e.g. {"2xx": 1000}. */
  statuses: Record<string, number>;
  /** Socket errors and responses that could not be parsed. */
  errors: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const CHUNKED_END = Buffer.from('\r\n0\r\n\r\n');

function buildRequest(t: LoadTarget): Buffer {
  const { host } = new URL(t.url);
  const body = t.body ?? '';
  const lines = [`${t.method} ${t.path} HTTP/1.1`, `Host: ${host}`, 'Connection: keep-alive'];
  for (const [k, v] of Object.entries(t.headers ?? {})) lines.push(`${k}: ${v}`);
  if (body || t.method === 'POST' || t.method === 'PUT' || t.method === 'PATCH') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** Length of the first complete response in `buf`, or -1 while it is incomplete. */
function responseLength(buf: Buffer): { length: number; status: number; close: boolean } | null {
  const headerEnd = buf.indexOf(CRLFCRLF);
  if (headerEnd < 0) return null;
  const head = buf.toString('latin1', 0, headerEnd);
  const status = Number(head.slice(9, 12));
  const close = /\r\nconnection:\s*close/i.test(head);
  const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (cl) {
    const length = headerEnd + 4 + Number(cl[1]);
    return buf.length >= length ? { length, status, close } : null;
  }
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const end = buf.indexOf(CHUNKED_END, headerEnd + 2);
    return end < 0 ? null : { length: end + CHUNKED_END.length, status, close };
  }
  // No length: the body runs to the end of the connection (not expected from fastify).
  return { length: headerEnd + 4, status, close: true };
}

export async function runLoad(target: LoadTarget, options: LoadOptions): Promise<LoadResult> {
  const { hostname, port } = new URL(target.url);
  const sets = (target.perConnection ?? [[target.path, ...(target.alternate ?? [])]]).map((paths) => paths.map((path) => buildRequest({ ...target, path })));
  let nextSet = 0;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.durationMs;

  const connection = () =>
    new Promise<void>((resolve) => {
      const requests = sets[nextSet++ % sets.length]!;
      let socket: net.Socket;
      let pending = Buffer.alloc(0);
      let sentAt = 0;
      let turn = 0;
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        socket.destroy();
        resolve();
      };
      const send = () => {
        if (performance.now() >= deadline) return finish();
        sentAt = performance.now();
        socket.write(requests[turn++ % requests.length]!);
      };
      const open = () => {
        pending = Buffer.alloc(0);
        socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
        socket.on('connect', send);
        socket.on('data', (chunk) => {
          pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
          const r = responseLength(pending);
          if (!r) return;
          latencies.push(performance.now() - sentAt);
          const cls = `${Math.floor(r.status / 100)}xx`;
          statuses[cls] = (statuses[cls] ?? 0) + 1;
          pending = pending.subarray(r.length);
          if (r.close) {
            socket.removeAllListeners();
            socket.destroy();
            if (performance.now() < deadline) open();
            else finish();
          } else send();
        });
        socket.on('error', () => {
          errors++;
          socket.removeAllListeners();
          socket.destroy();
          if (performance.now() < deadline) setTimeout(open, 10);
          else finish();
        });
      };
      open();
    });

  await Promise.all(Array.from({ length: options.connections }, connection));
  const durationMs = performance.now() - started;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]! : 0);
  return {
    requests: latencies.length,
    durationMs,
    rps: (latencies.length / durationMs) * 1000,
    statuses,
    errors,
    latencyMs: {
      mean: latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : 0,
      p50: pct(50),
      p90: pct(90),
      p99: pct(99),
      max: latencies.at(-1) ?? 0,
    },
  };
}
