/** A catch-up subscription built from paged reads plus a wake-up signal, shared by adapters. */
import type { RecordedEvent, Subscription } from './port.js';

export interface PollingSource {
  after: number;
  readPage(after: number): Promise<RecordedEvent[]>;
  /** Registers a listener called when new events may exist; returns an unsubscribe function. */
  onAppend(listener: () => void): () => void;
  pollMs: number;
  isClosed(): boolean;
}

export function pollingSubscription(src: PollingSource): Subscription {
  let position = src.after;
  let closed = false;
  let wake: (() => void) | null = null;
  // Set when an append is signalled while no one waits, so a wake-up between a read and the wait is not lost.
  let pending = false;
  const signal = () => {
    const w = wake;
    wake = null;
    if (w) w();
    else pending = true;
  };
  const off = src.onAppend(signal);
  // The safety net (appends no signal announces: another process's) as one timer for the
  // subscription's life, not one made and cleared at every wait: a busy subscription waits once per
  // group the log stores, and every process has several subscriptions.
  const poll = setInterval(signal, src.pollMs);
  poll.unref?.();
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(poll);
    off();
    signal();
  };

  // One loop for both forms: the per-event iteration is built on the pages this yields.
  async function* pages(): AsyncGenerator<readonly RecordedEvent[]> {
    try {
      while (!closed && !src.isClosed()) {
        pending = false;
        const page = await src.readPage(position);
        if (page.length === 0) {
          if (pending || closed) continue;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          continue;
        }
        // The next read starts after this page: a consumer leaving mid-page closes the subscription.
        position = page[page.length - 1]!.position;
        yield page;
      }
    } finally {
      close();
    }
  }

  async function* events(batches: AsyncIterable<readonly RecordedEvent[]>): AsyncGenerator<RecordedEvent> {
    for await (const page of batches) {
      for (const e of page) {
        // Closed mid-page: the rest of the page is not delivered, as the per-event form always did.
        if (closed || src.isClosed()) return;
        yield e;
      }
    }
  }

  // Made once: iterating again continues where the last iteration stopped.
  let batches: AsyncGenerator<readonly RecordedEvent[]> | null = null;
  let perEvent: AsyncGenerator<RecordedEvent> | null = null;
  return {
    close,
    batches: () => (batches ??= pages()),
    [Symbol.asyncIterator]: () => (perEvent ??= events((batches ??= pages()))),
  };
}

const TURNED = Symbol('turned');

/**
 * Batches over a per-event iterator (an adapter whose events come from a stream, not pages): each
 * batch holds the events that arrive before the next turn of the event loop, so a burst is one
 * batch and a lone event waits one turn at most. `close` ends the per-event iteration when the
 * consumer leaves early (its pending `next()` then resolves as done).
 */
export async function* gatheredBatches<T>(it: AsyncIterator<T>, close: () => void): AsyncGenerator<readonly T[]> {
  // Always one `next()` asked ahead: the one a turn did not wait for opens the following batch.
  let next = it.next();
  try {
    for (;;) {
      const first = await next;
      if (first.done) return;
      const batch = [first.value];
      const turn = new Promise<typeof TURNED>((resolve) => setImmediate(resolve, TURNED));
      for (;;) {
        next = it.next();
        // The end or a failure closes the batch too: it is delivered first, then the next step's
        // `await next` ends the iteration or throws, as the per-event iteration would after it.
        const r = await Promise.race([next, turn]).catch((): typeof TURNED => TURNED);
        if (r === TURNED || r.done) break;
        batch.push(r.value);
      }
      yield batch;
    }
  } finally {
    close();
  }
}
