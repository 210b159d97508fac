/**
 * The webhooks bench's receiver, in a worker thread: a bare keep-alive HTTP/1.1 server on `net` that
 * reads each request's head for `webhook-id` and `content-length`, skips the body and answers
 * `200` with no body. It does not verify signatures (the delivery tests do) and parses nothing else,
 * so the bench measures the platform, not a receiver sharing its two cores: on node's http server
 * the receiver cost about as much CPU per delivery as the sender. It records when each webhook id
 * first arrived (on the clock `performance.timeOrigin + performance.now()`, the same in every
 * thread) and, once `expected` distinct ids arrived, posts them all to the parent in one message
 * (the parent may then ask for more: `{ expect: n }`, n counting every id since the start).
 */
import net from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';

const HEAD_END = Buffer.from('\r\n\r\n');
const OK = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');

/** One complete request at the start of `buf`: its length and webhook-id; null while incomplete. */
export function nextRequest(buf: Buffer): { length: number; webhookId: string | null } | null {
  const headEnd = buf.indexOf(HEAD_END);
  if (headEnd < 0) return null;
  const head = buf.toString('latin1', 0, headEnd).toLowerCase();
  const cl = /\r\ncontent-length: *(\d+)/.exec(head);
  const length = headEnd + 4 + (cl ? Number(cl[1]) : 0);
  if (buf.length < length) return null;
  const at = head.indexOf('\r\nwebhook-id:');
  let webhookId: string | null = null;
  if (at >= 0) {
    const end = head.indexOf('\r\n', at + 2);
    // The id as sent (the head was lower-cased only to find the names).
    webhookId = buf.toString('latin1', at + 13, end < 0 ? headEnd : end).trim();
  }
  return { length, webhookId };
}

export interface ReceiverOptions {
  expected: number;
}

/**
 * Starts the receiver; resolves with its port. `onAll` gets [id, first arrival][] and the requests
 * seen once `expected` ids arrived, and again once as many as `expect(n)` asks for did.
 */
export function startReceiver(
  options: ReceiverOptions,
  onAll: (arrivals: [string, number][], requests: number) => void,
): Promise<{ port: number; close: () => void; requests: () => number; expect: (n: number) => void }> {
  const arrivals = new Map<string, number>();
  let requests = 0;
  let expected = options.expected;
  const expect = (n: number) => {
    expected = n;
    if (arrivals.size >= n) onAll([...arrivals], requests);
  };
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let answers = 0;
      for (let r = nextRequest(pending); r; r = nextRequest(pending)) {
        pending = pending.subarray(r.length);
        answers++;
        requests++;
        if (r.webhookId !== null && !arrivals.has(r.webhookId)) {
          arrivals.set(r.webhookId, performance.timeOrigin + performance.now());
          if (arrivals.size === expected) onAll([...arrivals], requests);
        }
      }
      if (answers === 1) socket.write(OK);
      else if (answers > 1) socket.write(Buffer.concat(Array.from({ length: answers }, () => OK)));
    });
    socket.on('error', () => socket.destroy());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as net.AddressInfo).port, close: () => server.close(), requests: () => requests, expect })),
  );
}

// As a worker thread: start, tell the parent the port, post the arrivals (the parent terminates it).
if (parentPort && (workerData as { receiver?: ReceiverOptions } | null)?.receiver) {
  const port = parentPort;
  const r = await startReceiver((workerData as { receiver: ReceiverOptions }).receiver, (arrivals, requests) => port.postMessage({ arrivals, requests }));
  // 'requests': how many requests so far (the parent's count at the end of a warm-up); { expect }: the next count to post the arrivals at.
  port.on('message', (m: unknown) => {
    if (m === 'requests') port.postMessage({ requestsSoFar: r.requests() });
    else if (typeof m === 'object' && m !== null && 'expect' in m) r.expect((m as { expect: number }).expect);
  });
  port.postMessage({ port: r.port });
}
