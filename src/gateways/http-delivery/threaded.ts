/**
 * Delivery POSTs on a thread of their own. Building a request, writing it to its socket and parsing
 * the answer took about a fifth of the platform thread's time per webhook delivery; here that runs on
 * a worker thread, which runs `postJson` (post.ts) unchanged, so the address guard, the time limit and
 * the keep-alive pools are the same. The platform thread hands over the POSTs of one turn of its event
 * loop in one message and gets the outcomes back the same way (status codes, or error messages).
 *
 * Only the built code can start the thread (it loads this file's compiled JavaScript); run from the
 * TypeScript sources (tests), `threadedPoster()` is `postJson` itself.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { postJson, type HttpPoster, type PostOptions, type PostResult } from './post.js';

type Request = [id: number, url: string, body: string, options: PostOptions];
type Outcome = [id: number, statusCode: number, error: null] | [id: number, statusCode: 0, error: string, name?: string];

const WORKER_TASK = 'http-delivery-poster';

class PosterThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: PostResult) => void; reject: (e: Error) => void }>();
  private outbox: Request[] = [];

  post: HttpPoster = (url, body, options) =>
    new Promise<PostResult>((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      this.outbox.push([id, url, body, options]);
      if (this.outbox.length === 1) setImmediate(() => this.flush());
    });

  private flush() {
    const batch = this.outbox;
    this.outbox = [];
    try {
      const thread = this.thread();
      // While POSTs are in flight the thread keeps the process alive, as their sockets would.
      thread.ref();
      thread.postMessage(batch);
    } catch (err) {
      for (const [id] of batch) this.settle([id, 0, `delivery thread: ${(err as Error).message}`]);
    }
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL(import.meta.url), { workerData: { task: WORKER_TASK } });
    worker.on('message', (outcomes: Outcome[]) => outcomes.forEach((o) => this.settle(o)));
    const lost = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      // Attempts in flight fail like a network error and are retried on schedule.
      for (const id of [...this.pending.keys()]) this.settle([id, 0, `delivery thread ${why}`]);
    };
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    // Idle, it keeps no process alive. After the listeners: adding one refs the thread's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private settle([id, statusCode, error, name]: Outcome) {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker?.unref();
    if (error === null) return p.resolve({ statusCode });
    const err = new Error(error);
    if (name) err.name = name;
    p.reject(err);
  }
}

let shared: PosterThread | null = null;

/** The process's delivery poster: on its own thread in the built code, else postJson. */
export function threadedPoster(): HttpPoster {
  if (!import.meta.url.endsWith('.js')) return postJson;
  shared ??= new PosterThread();
  return shared.post;
}

// The thread: runs each POST it is handed, sends the outcomes of one turn back together.
if (!isMainThread && (workerData as { task?: string } | null)?.task === WORKER_TASK) {
  const port = parentPort!;
  let done: Outcome[] = [];
  const send = (o: Outcome) => {
    done.push(o);
    if (done.length === 1)
      setImmediate(() => {
        const batch = done;
        done = [];
        port.postMessage(batch);
      });
  };
  port.on('message', (batch: Request[]) => {
    for (const [id, url, body, options] of batch) {
      postJson(url, body, options).then(
        (r) => send([id, r.statusCode, null]),
        (err: unknown) => send(err instanceof Error ? [id, 0, err.message, err.name] : [id, 0, String(err)]),
      );
    }
  });
}
