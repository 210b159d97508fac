/**
 * The calls bench's client, in a worker thread (off the platform's thread, as the http suite's load
 * generator is): `lanes` keep-alive connections, each placing a call with POST /api/v1/calls, telling
 * the parent its id and when it was sent, and placing the next once the parent says that call ended.
 */
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { formPoster } from './form-post.js';

export interface CallsClientOptions {
  url: string;
  authorization: string;
  total: number;
  lanes: number;
}

/** To the parent: a call placed (`at` on performance.timeOrigin + now()), a failure, or the end. */
export type ClientMessage = { placed: string; at: number } | { failed: string } | { done: true };

if (parentPort && (workerData as { calls?: CallsClientOptions } | null)?.calls) {
  const port = parentPort;
  const o = (workerData as { calls: CallsClientOptions }).calls;
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.lanes });
  const ended = new Map<string, () => void>();
  port.on('message', (m: { ended: string }) => {
    const done = ended.get(m.ended);
    if (done) {
      ended.delete(m.ended);
      done();
    }
  });
  const postForm = formPoster(agent, o.url, o.authorization);
  const post = (body: string) => postForm('/api/v1/calls', body);
  let placed = 0;
  const lane = async () => {
    while (placed < o.total) {
      placed++;
      const at = performance.timeOrigin + performance.now();
      const res = await post(`number=98${String(placed).padStart(8, '7')}`);
      if (res.status !== 200) throw new Error(`POST /calls: ${res.status} ${res.text}`);
      const { id } = JSON.parse(res.text) as { id: string };
      // Registered before the parent hears of the call: its end may come straight back.
      const end = new Promise<void>((r) => ended.set(id, r));
      port.postMessage({ placed: id, at } satisfies ClientMessage);
      await end;
    }
  };
  try {
    await Promise.all(Array.from({ length: o.lanes }, lane));
    port.postMessage({ done: true } satisfies ClientMessage);
  } catch (err) {
    port.postMessage({ failed: (err as Error).message } satisfies ClientMessage);
  }
  agent.destroy();
}
