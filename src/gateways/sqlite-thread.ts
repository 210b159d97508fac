/**
 * A SQLite file's work on a thread of its own, beside the platform thread: requests and answers
 * cross as strings (a string is far cheaper to post than objects: one copy, no structured clone of
 * each property), each with its id, so a request the thread answers later (a write waiting for its
 * sync) does not hold up the others. The thread has its own connection; the platform thread may keep
 * reading the file on its own connection (WAL: readers never wait for it).
 *
 * Only the built code can start such a thread (it loads compiled JavaScript); see `canRunThreads`.
 */
import { Worker, isMainThread, parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';

/** Whether threads can run from this build: compiled code, a file (not ':memory:'). */
export const canRunThreads = (file: string) => file !== ':memory:' && import.meta.url.endsWith('.js');

type ToThread = [id: number, request: string] | 'close';
type FromThread = [id: number, ok: true, answer: string] | [id: number, ok: false, error: string];

/** A failure as it crosses threads: its message and code (SQLite's, e.g. SQLITE_BUSY, SQLITE_FULL). */
function errorText(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown };
  return JSON.stringify({ message: String(e?.message ?? err), ...(typeof e?.code === 'string' ? { code: e.code } : {}) });
}

function errorOf(text: string): Error {
  const { message, code } = JSON.parse(text) as { message: string; code?: string };
  const err = new Error(message) as Error & { code?: string };
  if (code !== undefined) err.code = code;
  return err;
}

/** The platform thread's side. */
export class SqliteThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (answer: string) => void; reject: (err: unknown) => void }>();
  private closed = false;
  /** Threads started so far: a new one (after one was lost) starts its counts anew. */
  starts = 0;

  /** `module` serves `task` (serveOnThread) with `data`; `name` says whose thread in errors. */
  constructor(
    private readonly name: string,
    private readonly module: URL,
    private readonly task: string,
    private readonly data: object,
  ) {}

  /** The thread's answer; rejects with the thread's error, or when the thread died before answering. */
  request(text: string): Promise<string> {
    if (this.closed) return Promise.reject(new Error(`${this.name} is closed`));
    return new Promise((resolve, reject) => {
      try {
        const worker = this.thread();
        const id = this.nextId++;
        this.waiting.set(id, { resolve, reject });
        // While a request is in flight the thread keeps the process alive.
        if (this.waiting.size === 1) worker.ref();
        worker.postMessage([id, text] satisfies ToThread);
      } catch (err) {
        reject(err);
      }
    });
  }

  /** Ends the thread once it has answered what was sent, and closed its file. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.ref();
    worker.postMessage('close' satisfies ToThread);
    await exited;
  }

  /** Stops the thread at once, as a crash would (test aid); requests in flight fail. */
  abandon(): void {
    this.closed = true;
    void this.worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.module, { workerData: { ...this.data, task: this.task } });
    this.starts++;
    worker.on('message', ([id, ok, text]: FromThread) => {
      const w = this.waiting.get(id);
      if (!w) return;
      this.waiting.delete(id);
      if (this.waiting.size === 0 && this.worker === worker) worker.unref();
      if (ok) w.resolve(text);
      else w.reject(errorOf(text));
    });
    const lost = (why: string) => {
      // Closed (its answers all came first), or already replaced.
      if (this.worker !== worker) return;
      this.worker = null;
      // What was in flight may or may not be stored: its callers are told it failed.
      const err = new Error(`${this.name} thread ${why}`);
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    // Idle, it keeps no process alive. After the listeners: adding one refs the thread's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }
}

/** What a thread serves: each request alone, or (`handleBatch`) every request waiting at once together. */
export interface ThreadHandler {
  handle(request: string): string | Promise<string>;
  /**
   * Optional: the requests that had arrived by the time the thread took the first (in order), handled
   * together (one transaction for all of them), one answer each; a failure fails them all.
   */
  handleBatch?(requests: string[]): string[];
  close(): void | Promise<void>;
}

/**
 * The thread's side, run when this thread was started for `task`: `open` makes the handler of its
 * requests (answers a string, now or later, or fails: the caller's promise rejects with the error).
 * A file that cannot be opened fails every request with the reason. A close waits for the requests
 * in flight to be answered, then closes the handler.
 */
export function serveOnThread<D>(task: string, open: (data: D) => ThreadHandler): void {
  if (isMainThread || (workerData as { task?: string } | null)?.task !== task) return;
  const port = parentPort!;
  let handler: ThreadHandler | null = null;
  let openError: unknown = null;
  try {
    handler = open(workerData as D);
  } catch (err) {
    openError = err;
  }
  const inFlight = new Set<Promise<void>>();
  const close = () => {
    void Promise.allSettled([...inFlight])
      .then(() => handler?.close())
      .finally(() => port.close());
  };
  const one = (id: number, request: string) => {
    const answered = (async () => {
      try {
        if (!handler) throw openError;
        port.postMessage([id, true, await handler.handle(request)] satisfies FromThread);
      } catch (err) {
        port.postMessage([id, false, errorText(err)] satisfies FromThread);
      }
    })();
    inFlight.add(answered);
    void answered.finally(() => inFlight.delete(answered));
  };
  port.on('message', (m: ToThread) => {
    if (m === 'close') return close();
    if (!handler?.handleBatch) return one(m[0], m[1]);
    // What else is already waiting goes with it (read without waiting for its 'message' event).
    const batch: [number, string][] = [m];
    let closing = false;
    for (let next = receiveMessageOnPort(port); next; next = closing ? undefined : receiveMessageOnPort(port)) {
      const n = next.message as ToThread;
      if (n === 'close') closing = true;
      else batch.push(n);
    }
    if (batch.length === 1) one(m[0], m[1]);
    else {
      try {
        const answers = handler.handleBatch(batch.map(([, r]) => r));
        batch.forEach(([id], i) => port.postMessage([id, true, answers[i]!] satisfies FromThread));
      } catch (err) {
        const text = errorText(err);
        for (const [id] of batch) port.postMessage([id, false, text] satisfies FromThread);
      }
    }
    if (closing) close();
  });
}

/**
 * Fields in one string, each its length and its text (null: '~'): any text travels as it is, with
 * no escaping, and numbers as their decimal text.
 */
export function pack(fields: readonly (string | number | null)[]): string {
  let out = '';
  for (const f of fields) {
    if (f === null) out += '~';
    else {
      const s = typeof f === 'number' ? String(f) : f;
      out += `${s.length}:${s}`;
    }
  }
  return out;
}

export function unpack(text: string): (string | null)[] {
  const out: (string | null)[] = [];
  let i = 0;
  while (i < text.length) {
    if (text.charCodeAt(i) === 126) {
      out.push(null);
      i++;
      continue;
    }
    const colon = text.indexOf(':', i);
    if (colon < 0) throw new Error('malformed packed fields');
    const end = colon + 1 + Number(text.slice(i, colon));
    if (!(end <= text.length)) throw new Error('malformed packed fields');
    out.push(text.slice(colon + 1, end));
    i = end;
  }
  return out;
}
