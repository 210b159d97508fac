/**
 * KurrentDB event store (EVENTSTORE_URL), on `@kurrent/kurrentdb-client`.
 *
 * - Positions are KurrentDB commit positions (byte offsets in the transaction log: increasing,
 *   sparse). The client hands them out as bigint; the port uses numbers, so each one is converted
 *   with a range check (`toPosition`) that refuses, loudly, anything past 2^53 − 1 (9 PB of log)
 *   instead of silently rounding it.
 * - Metadata travels as string properties, the only kind multi-stream append takes: every value is
 *   JSON-encoded on write and decoded on read, on both append paths, so reads decode one format.
 * - The port's promise that re-appending an event id is a no-op is kept by reading the stream's tail
 *   after a conflict or an ambiguous failure (the append may have been stored) and comparing ids.
 * - `streamPrefix` keeps several deployments (or test runs) apart on one server: stream names are
 *   stored with it, and `$all` reads and subscriptions see only streams that carry it.
 *
 * The mapping between the port's values and the client's (ids, positions, metadata, revisions,
 * merged appends, the version check) is in kurrentdb-mapping.ts; this file is the store itself.
 */
import {
  BACKWARDS,
  END,
  FORWARDS,
  KurrentDBClient,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type AppendStreamRequest,
  type Filter,
  type ResolvedEvent,
  type AllStreamSubscription,
} from '@kurrent/kurrentdb-client';
import {
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type Subscription,
  WrongExpectedRevisionError,
  matchesExpected,
} from './port.js';
import { unavailable } from '../../domain/errors.js';
import { backoffMs, type Backoff } from '../../domain/backoff.js';
import { gatheredBatches } from './subscription.js';
import {
  MIN_SERVER_VERSION,
  assertServerVersion,
  atLeast,
  decodeMetadata,
  encodeMetadata,
  eventTime,
  eventUuid,
  fromPosition,
  isAmbiguous,
  isSystem,
  mergeAppends,
  normalizeConnectionString,
  streamState,
  toPosition,
} from './kurrentdb-mapping.js';

export { MIN_SERVER_VERSION, atLeast, decodeMetadata, encodeMetadata, eventTime, mergeAppends, normalizeConnectionString, toPosition };

export interface KurrentDbOptions {
  /** Prepended to every stream name; `$all` reads and subscriptions see only these streams. */
  streamPrefix?: string;
  /** Told about dropped subscriptions and retried appends. */
  log?: (level: 'warn' | 'info', message: string, details?: Record<string, unknown>) => void;
  /** Resubscribe back-off after a drop: first delay and cap, in ms. */
  resubscribeMs?: Backoff;
  /** Attempts of an append whose outcome was unknown (the id check makes each retry safe). */
  appendAttempts?: number;
  /** The events' time (epoch ms), kept in their metadata (kurrentdb-mapping.ts, TIME_KEY); default Date.now. */
  clock?: () => number;
}

export class KurrentDbEventStore implements EventStore {
  private closed = false;
  private readonly subscriptions = new Set<() => void>();
  private readonly prefix: string;
  private readonly filter: Filter;

  private constructor(
    private readonly client: KurrentDBClient,
    private readonly options: KurrentDbOptions,
  ) {
    this.prefix = options.streamPrefix ?? '';
    this.filter = this.prefix ? streamNameFilter({ prefixes: [this.prefix] }) : excludeSystemEvents();
  }

  /** Connects and checks that the server is KurrentDB 25.1 or newer (multi-stream append). */
  static async connect(url: string, options: KurrentDbOptions = {}): Promise<KurrentDbEventStore> {
    const client = KurrentDBClient.connectionString(normalizeConnectionString(url));
    try {
      await assertServerVersion(client);
    } catch (err) {
      await client.dispose().catch(() => {});
      throw err;
    }
    return new KurrentDbEventStore(client, options);
  }

  private name = (streamId: string) => this.prefix + streamId;

  async appendToStream(streamId: string, events: NewEvent[], options: { expectedRevision?: ExpectedRevision } = {}): Promise<AppendResult> {
    const [result] = await this.appendToStreams([{ streamId, events, expectedRevision: options.expectedRevision ?? 'any' }]);
    return result!;
  }

  async appendToStreams(appends: StreamAppend[]): Promise<AppendResult[]> {
    this.assertOpen();
    const merged = mergeAppends(appends);
    // Ids (and the time) fixed before the first attempt: every retry and every tail check compares the same ids.
    const time = (this.options.clock ?? Date.now)();
    const batch = merged.map((a) => ({ ...a, time, events: a.events.map((e) => ({ ...e, id: eventUuid(e.id) })) }));
    const results = new Map<string, AppendResult>();
    let pending = batch.filter((a) => a.events.length > 0);
    // An entry without events only asserts its expectation (checked here, not atomically).
    for (const a of batch.filter((a) => a.events.length === 0)) {
      const tail = await this.tail(a.streamId, 1);
      const actual = tail.at(-1)?.revision ?? -1;
      if (!matchesExpected(a.expectedRevision, actual)) throw new WrongExpectedRevisionError(a.streamId, a.expectedRevision, actual);
      results.set(a.streamId, { nextExpectedRevision: actual, position: tail.at(-1)?.position ?? 0 });
    }
    const attempts = this.options.appendAttempts ?? 4;
    for (let attempt = 1; pending.length > 0; attempt++) {
      try {
        const written = pending.length === 1 ? [await this.appendOne(pending[0]!)] : await this.appendMany(pending);
        pending.forEach((a, i) => results.set(a.streamId, written[i]!));
        pending = [];
      } catch (err) {
        const conflict = err instanceof WrongExpectedVersionError;
        if (!conflict && !isAmbiguous(err)) throw err;
        // Already stored (a retry of an append that went through)? Then those streams are done.
        const stored = await Promise.all(pending.map((a) => this.alreadyStored(a.streamId, a.events.map((e) => e.id!))));
        pending.forEach((a, i) => stored[i] && results.set(a.streamId, stored[i]!));
        const remaining = pending.filter((_, i) => !stored[i]);
        if (conflict) {
          const w = err as WrongExpectedVersionError;
          const named = pending.find((a) => this.name(a.streamId) === w.streamName);
          // The stream the server named already holds these events (a replay mixing stored and new
          // streams, with expected revisions): not a conflict; the rest goes again, without it.
          if (named && !remaining.includes(named)) {
            pending = remaining;
            continue;
          }
          const conflicted = named ?? remaining[0];
          // Unnamed and some streams stored: the rest goes again.
          if (!named && remaining.length < pending.length) {
            pending = remaining;
            continue;
          }
          if (conflicted) throw new WrongExpectedRevisionError(conflicted.streamId, conflicted.expectedRevision, w.actualState === 'no_stream' ? -1 : Number(w.actualState));
        } else if (attempt >= attempts && remaining.length > 0) {
          throw unavailable('the event store did not confirm the append; nothing of it was stored');
        } else if (remaining.length > 0) {
          this.options.log?.('warn', 'event store: append outcome unknown; retrying', { attempt, err: String(err) });
          await sleep(backoffMs(attempt, APPEND_BACKOFF));
        }
        pending = remaining;
      }
    }
    return appends.map((a) => results.get(a.streamId)!);
  }

  private toEvents(events: NewEvent[], time: number) {
    return events.map((e) => jsonEvent({ id: e.id!, type: e.type, data: (e.data ?? null) as never, metadata: encodeMetadata(e.metadata, time) }));
  }

  private async appendOne(a: StreamAppend & { time: number }): Promise<AppendResult> {
    const r = await this.client.appendToStream(this.name(a.streamId), this.toEvents(a.events, a.time), { streamState: streamState(a.expectedRevision) });
    const position = toPosition(r.position?.commit) ?? (await this.tail(a.streamId, 1)).at(-1)?.position ?? 0;
    return { nextExpectedRevision: Number(r.nextExpectedRevision), position };
  }

  private async appendMany(batch: (StreamAppend & { time: number })[]): Promise<AppendResult[]> {
    const requests: AppendStreamRequest[] = batch.map((a) => ({
      streamName: this.name(a.streamId),
      expectedState: streamState(a.expectedRevision),
      events: this.toEvents(a.events, a.time),
    }));
    const r = await this.client.multiStreamAppend(requests);
    // The response carries one position for the whole transaction; each stream's own last event
    // position is read back, so a caller waiting for it never waits for a position no event has.
    return Promise.all(
      batch.map(async (a, i) => {
        const revision = Number(r.responses[i]?.revision ?? -1);
        const last = (await this.tail(a.streamId, 1)).at(-1);
        return { nextExpectedRevision: revision, position: last?.position ?? toPosition(r.position) ?? 0 };
      }),
    );
  }

  /** The stream's last events, oldest first. */
  private async tail(streamId: string, count: number): Promise<RecordedEvent[]> {
    const out = await this.collect(this.client.readStream(this.name(streamId), { direction: BACKWARDS, fromRevision: END, maxCount: count }));
    return out.reverse();
  }

  /** When every id is in the stream's tail, the append already happened: its result, else null. */
  private async alreadyStored(streamId: string, ids: string[]): Promise<AppendResult | null> {
    const tail = await this.tail(streamId, ids.length + 100);
    const present = new Set(tail.map((e) => e.id));
    if (!ids.every((id) => present.has(id))) return null;
    const last = tail.at(-1)!;
    return { nextExpectedRevision: last.revision, position: last.position };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.collect(
      this.client.readStream(this.name(streamId), {
        direction: FORWARDS,
        fromRevision: options.fromRevision ? BigInt(options.fromRevision) : START,
        maxCount: options.maxCount ?? Number.MAX_SAFE_INTEGER,
      }),
    );
  }

  private async collect(source: AsyncIterable<ResolvedEvent>): Promise<RecordedEvent[]> {
    const out: RecordedEvent[] = [];
    try {
      for await (const resolved of source) {
        const e = this.toRecorded(resolved);
        if (e) out.push(e);
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError) return [];
      throw err;
    }
    // A server that leaves positions out of stream reads: the head is an upper bound, which is
    // what callers use a stream event's position for (waiting until the read models have it).
    if (out.some((e) => e.position < 0)) {
      const head = await this.headPosition();
      for (const e of out) if (e.position < 0) e.position = head;
    }
    return out;
  }

  private toRecorded(resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent | null {
    const e = resolved.event;
    if (!e || isSystem(e.streamId, e.type)) return null;
    if (this.prefix && !e.streamId.startsWith(this.prefix)) return null;
    return {
      id: e.id,
      streamId: e.streamId.slice(this.prefix.length),
      revision: Number(e.revision),
      position: toPosition(e.position?.commit ?? resolved.commitPosition) ?? -1,
      type: e.type,
      data: e.isJson ? e.data : null,
      metadata: decodeMetadata(e.metadata),
      time: eventTime(e.metadata, e.created),
    };
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const after = options.after ?? 0;
    const max = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    const out: RecordedEvent[] = [];
    let from = after;
    // Reading from a position includes the event there; pages continue until enough are found.
    for (;;) {
      const want = Math.min(max - out.length + 1, 1000);
      let got = 0;
      for await (const resolved of this.client.readAll({ direction: FORWARDS, fromPosition: from ? fromPosition(from) : START, maxCount: want, filter: this.filter })) {
        got++;
        const e = this.toRecorded(resolved);
        const p = toPosition(resolved.event?.position?.commit ?? resolved.commitPosition);
        if (p !== undefined) from = Math.max(from, p);
        if (!e || e.position <= after || (out.length && e.position <= out.at(-1)!.position)) continue;
        out.push(e);
        if (out.length >= max) return out;
      }
      if (got < want) return out;
    }
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    for await (const resolved of this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 20, filter: this.filter })) {
      const e = this.toRecorded(resolved);
      if (e && e.position >= 0) return e.position;
    }
    return 0;
  }

  subscribeToAll(options: { after?: number } = {}): Subscription {
    const backoff = this.options.resubscribeMs ?? { first: 100, max: 5000 };
    let last = options.after ?? 0;
    let closed = false;
    let current: AllStreamSubscription | null = null;
    let wake: (() => void) | null = null;
    const close = () => {
      if (closed) return;
      closed = true;
      this.subscriptions.delete(close);
      // Cancel the call, and end the iteration now rather than when the cancellation comes back.
      void current?.unsubscribe().catch(() => {});
      current?.destroy();
      wake?.();
    };
    this.subscriptions.add(close);
    const self = this;

    async function* iterate(): AsyncGenerator<RecordedEvent> {
      let dropped = 0;
      try {
        while (!closed && !self.closed) {
          const sub = self.client.subscribeToAll({ fromPosition: last ? fromPosition(last) : START, filter: self.filter });
          current = sub;
          try {
            for await (const resolved of sub) {
              if (closed) break;
              const e = self.toRecorded(resolved);
              // Never twice: after a resubscription nothing at or before the last delivered position.
              if (!e || e.position <= last) continue;
              last = e.position;
              dropped = 0;
              yield e;
            }
            if (closed || self.closed) return;
            self.options.log?.('warn', 'event store: subscription ended; resubscribing', { after: last });
          } catch (err) {
            if (closed || self.closed) return;
            self.options.log?.('warn', 'event store: subscription dropped; resubscribing', { after: last, err: String(err) });
          } finally {
            void sub.unsubscribe().catch(() => {});
          }
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, backoffMs(dropped, backoff));
            wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          wake = null;
          dropped++;
        }
      } finally {
        close();
      }
    }

    const it = iterate();
    let batches: AsyncIterable<readonly RecordedEvent[]> | null = null;
    return { close, batches: () => (batches ??= gatheredBatches(it, close)), [Symbol.asyncIterator]: () => it };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const close of [...this.subscriptions]) close();
    await this.client.dispose();
  }

  private assertOpen() {
    if (this.closed) throw new Error('event store is closed');
  }
}

/** The wait before resending an append whose outcome is unknown. */
const APPEND_BACKOFF: Backoff = { first: 100, max: 2000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
