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
  let buffer: RecordedEvent[] = [];
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

  async function* iterate(): AsyncGenerator<RecordedEvent> {
    try {
      while (!closed && !src.isClosed()) {
        if (buffer.length === 0) {
          pending = false;
          buffer = await src.readPage(position);
          if (buffer.length === 0) {
            if (pending || closed) continue;
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            continue;
          }
        }
        const next = buffer.shift()!;
        position = next.position;
        yield next;
      }
    } finally {
      close();
    }
  }

  const it = iterate();
  return {
    close,
    [Symbol.asyncIterator]: () => it,
  };
}
