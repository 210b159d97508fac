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

/** Freezes a decoded event and everything in it: one object is handed to every subscriber. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}

/**
 * The recent end of the log, read and decoded once for every subscription of a store. Each of the
 * process's followers (projector, analytics, workers, the socket, ...) pulls every event; without
 * this each one read its own rows and JSON.parse'd its own copy of every event. It keeps the last
 * `capacity` events read, contiguous: every event after `base` up to the newest kept. A page asked
 * for within that window is sliced from it; one asked for at its end is read from the store once and
 * added to it; one asked for before it (a subscriber far behind) is read from the store as before.
 *
 * Events are frozen (deep): subscribers share them. The window only ever holds what `read` returned,
 * and a read after its last event returns what follows it in the log (the adapter's reads are
 * contiguous: the embedded store shows no event before those it held back are synced), so a slice
 * is exactly what a read would have returned.
 */
export class SharedTail {
  private events: RecordedEvent[] = [];
  /** The window holds every event with base < position <= its last event's (or base, when empty). */
  private base = -1;
  /** Store reads made, and events they returned (decoded): tests and the bench count them. */
  reads = 0;
  decoded = 0;

  constructor(
    private readonly read: (after: number, max: number) => Promise<RecordedEvent[]>,
    private readonly capacity = 8192,
  ) {}

  async page(after: number, max: number): Promise<RecordedEvent[]> {
    if (this.base >= 0 && after >= this.base && after < this.top()) return this.slice(after, max);
    // Subscribers woken by one append all ask for what follows the window: one read serves them.
    if (this.reading?.after === after) {
      await this.reading.done;
      if (this.base >= 0 && after >= this.base && after < this.top()) return this.slice(after, max);
    }
    this.reads++;
    const done = this.read(after, max);
    const reading = { after, done };
    this.reading = reading;
    let fresh: RecordedEvent[];
    try {
      fresh = await done;
    } finally {
      if (this.reading === reading) this.reading = null;
    }
    this.decoded += fresh.length;
    for (const e of fresh) deepFreeze(e);
    // Kept when it continues the window, or starts one past it (the read awaited: look again).
    const top = this.top();
    if (fresh.length > 0 && this.base >= 0 && after === top) this.events.push(...fresh);
    else if (fresh.length > 0 && after > top) {
      this.events = [...fresh];
      this.base = after;
    } else if (this.base < 0) this.base = after;
    // Trimmed a quarter at a time: not a copy of the whole window for every event added.
    if (this.events.length > this.capacity + (this.capacity >> 2)) {
      const drop = this.events.length - this.capacity;
      this.base = this.events[drop - 1]!.position;
      this.events = this.events.slice(drop);
    }
    return fresh;
  }

  private reading: { after: number; done: Promise<RecordedEvent[]> } | null = null;

  /** Position of the newest event kept (base when none). */
  private top(): number {
    return this.events.length > 0 ? this.events[this.events.length - 1]!.position : this.base;
  }

  /** Events after `after` (inside the window), at most `max`. */
  private slice(after: number, max: number): RecordedEvent[] {
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.events[mid]!.position <= after) lo = mid + 1;
      else hi = mid;
    }
    return this.events.slice(lo, lo + max);
  }
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
  const close = () => {
    if (closed) return;
    closed = true;
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
              const t = setTimeout(signal, src.pollMs);
              t.unref?.();
              wake = () => {
                clearTimeout(t);
                resolve();
              };
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
