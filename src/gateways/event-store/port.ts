/**
 * Event store port: the only source of truth. Streams are ordered by revision (0-based);
 * all events share one global order by position (1-based, strictly increasing, gap-free
 * in the embedded adapter, increasing but possibly sparse in others).
 */

export interface NewEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
  /** Unique id; generated when absent. Appending the same id twice in one stream is a no-op. */
  id?: string;
  metadata?: Record<string, unknown>;
}

export interface RecordedEvent<T extends string = string, D = unknown> {
  id: string;
  streamId: string;
  /** 0-based position inside the stream. */
  revision: number;
  /** Global position in the log; later events have larger positions. */
  position: number;
  type: T;
  data: D;
  metadata: Record<string, unknown>;
  /** Epoch ms when stored. */
  time: number;
}

/**
 * Expected state of a stream when appending:
 * a number (revision of the last event), 'no_stream', 'stream_exists' or 'any'.
 */
export type ExpectedRevision = number | 'no_stream' | 'stream_exists' | 'any';

export interface AppendResult {
  /** Revision of the last event now in the stream (-1 if nothing was ever written). */
  nextExpectedRevision: number;
  /** Global position of the last event written (or of the stream's last event when nothing was new). */
  position: number;
}

export interface StreamAppend {
  streamId: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: number,
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${actual}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

export interface ReadStreamOptions {
  /** First revision to read (inclusive). Default 0. */
  fromRevision?: number;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Read events with position strictly greater than this. Default 0 (from the start). */
  after?: number;
  maxCount?: number;
}

export interface Subscription extends AsyncIterable<RecordedEvent> {
  /**
   * The same events as iterating the subscription, in the same order, as non-empty arrays of the
   * events available at once (a page read, a burst received): one async step per array rather than
   * per event, for consumers that take every event. Consume a subscription one way or the other,
   * never both. The arrays are read-only: an adapter may hand out its own page. Leaving the
   * iteration early closes the subscription, as with the per-event iteration.
   */
  batches(): AsyncIterable<readonly RecordedEvent[]>;
  /** Ends the iteration, per event or in batches; pending `next()` calls resolve as done. */
  close(): void;
}

export interface AppendOptions<R = AppendResult> {
  expectedRevision?: ExpectedRevision;
  /**
   * Called once the append is committed, before it is durable (only adapters that commit before
   * they sync call it). Lets the next command on the stream in this process decide on top of it:
   * its own append is answered only after a sync that covers this one too.
   */
  onCommitted?: (result: R) => void;
}

export interface EventStore {
  /** Appends atomically to one stream, checking the expected revision first. */
  appendToStream(streamId: string, events: NewEvent[], options?: AppendOptions): Promise<AppendResult>;
  /**
   * Appends to several streams as one transaction: every expected revision is checked and
   * either all events are stored or none. Returns one result per stream, in order. An entry
   * without events only asserts its stream's expected revision (the worker's fence: fence.ts).
   */
  appendToStreams(appends: StreamAppend[], options?: Pick<AppendOptions<AppendResult[]>, 'onCommitted'>): Promise<AppendResult[]>;
  /** Events of a stream in revision order; an unknown stream reads as empty. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Events of every stream in global order. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Position of the newest stored event (0 when empty). */
  headPosition(): Promise<number>;
  /**
   * Catch-up subscription: yields every event after `after` in global order, then tails new
   * events as they are stored. Backpressure: events are read in pages only as the consumer pulls.
   */
  subscribeToAll(options?: { after?: number }): Subscription;
  close(): Promise<void>;
}

export function matchesExpected(expected: ExpectedRevision, actual: number): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === -1;
  if (expected === 'stream_exists') return actual >= 0;
  return expected === actual;
}
