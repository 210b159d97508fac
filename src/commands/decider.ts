/**
 * Deciders and the one command handler used by every route and worker: load the streams (cached
 * aggregates: only events after the cached revision are read), decide, append with each stream's
 * expected revision. A conflict is retried by the one policy of ./retry.ts (decide again on fresh
 * state after a short random pause; 503 UNAVAILABLE when it keeps conflicting).
 */
import type { AppendResult, EventStore, ExpectedRevision, NewEvent, RecordedEvent } from '../gateways/event-store/port.js';
import { RETRY, conflictToRetry, pause, retryOnConflict } from './retry.js';
import type { DomainEvent } from '../domain/events.js';
import { batchCommand } from './command-batch.js';
import type { CommandResult, Decider, HandleOptions } from './command-types.js';

export type { CommandResult, Decider, HandleOptions };
import { aggregateCache, instant, type Checked, type Folder, type Lane, type Loaded } from './aggregate-cache.js';

export type { DomainEvent };
export { RETRY };

export function fold<S, E extends DomainEvent>(decider: Pick<Decider<unknown, S, E>, 'initialState' | 'evolve'>, events: Iterable<E>): S {
  let state = decider.initialState();
  for (const e of events) state = decider.evolve(state, e);
  return state;
}

export const toDomain = <E extends DomainEvent>(e: RecordedEvent): E => ({ type: e.type, data: e.data }) as E;

/** The revision to expect when appending after these events. */
export const expectedAfter = (recorded: RecordedEvent[]): ExpectedRevision => (recorded.length ? recorded[recorded.length - 1]!.revision : 'no_stream');

/** The revision to expect when appending after a stream at `revision` (-1: no stream yet). */
export const expectedOf = (revision: number): ExpectedRevision => (revision >= 0 ? revision : 'no_stream');

/** A stream folded into state (from the aggregate cache), with the revision to expect when appending after it. */
export async function loadAggregate<S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Folder<S, E>,
): Promise<{ state: S; expected: ExpectedRevision; revision: number; position: number }> {
  const l = await aggregateCache(store).load(streamId, decider, toDomain<E>);
  return { state: l.state, revision: l.revision, position: l.position, expected: expectedOf(l.revision) };
}

/** A stream a command reads (and may append to). */
export interface StreamRead<S = any, E extends DomainEvent = any> {
  streamId: string;
  decider: Folder<S, E>;
}

/** Events a command appends to one stream; `id` makes an event idempotent. */
export interface StreamWrite {
  streamId: string;
  events: (DomainEvent & { id?: string })[];
  /** Defaults to the loaded revision for a stream the command read, else 'no_stream'. */
  expectedRevision?: ExpectedRevision;
}

export interface Decision<T> {
  appends: StreamWrite[];
  /** What the caller gets back (after a successful append). */
  value: T;
}

export interface MultiResult<T> {
  value: T;
  /** The loaded streams' states after the command, in the order given. */
  states: unknown[];
  /** One per append with events, in order. */
  results: AppendResult[];
  /** Highest position written (or of the loaded streams when nothing was). */
  position: number;
}

/**
 * The command handler for one or several streams: loads every stream in `reads`, calls `decide` with
 * their states (it may be async: hashing, a call's data), appends all its events in one transaction,
 * each stream checked against its revision. On a conflict: reload and decide again (retryOnConflict), then 503.
 */
export async function handleStreams<T>(
  store: EventStore,
  reads: StreamRead[],
  decide: (loaded: Loaded<any>[]) => Decision<T> | Promise<Decision<T>>,
  options: Omit<HandleOptions<DomainEvent>, 'eventId'> = {},
): Promise<MultiResult<T>> {
  const cache = aggregateCache(store);
  return retryOnConflict(async () => {
    const loaded = await Promise.all(reads.map((r) => cache.load(r.streamId, r.decider, toDomain)));
    const { appends, value } = await decide(loaded);
    const writes = appends.filter((a) => a.events.length > 0);
    if (writes.length === 0) {
      return { value, states: loaded.map((l) => l.state), results: [], position: Math.max(0, ...loaded.map((l) => l.position)) };
    }
    const indexOf = (streamId: string) => reads.findIndex((r) => r.streamId === streamId);
    const askedAt = instant();
    const results = await store.appendToStreams(
      writes.map((w) => {
        const i = indexOf(w.streamId);
        return {
          streamId: w.streamId,
          events: w.events.map((e) => ({ type: e.type, data: e.data, id: e.id, metadata: options.metadata })),
          expectedRevision: w.expectedRevision ?? (i >= 0 ? expectedOf(loaded[i]!.revision) : 'no_stream'),
        };
      }),
    );
    const states = loaded.map((l) => l.state);
    writes.forEach((w, k) => {
      const i = indexOf(w.streamId);
      if (i < 0) return;
      const r = results[k]!;
      const read = reads[i]!;
      // Only when the store holds exactly our events after what we loaded (not an idempotent no-op).
      if (r.nextExpectedRevision !== loaded[i]!.revision + w.events.length) return cache.forget(w.streamId, read.decider);
      let s = loaded[i]!.state;
      for (const e of w.events) s = read.decider.evolve(s, { type: e.type, data: e.data });
      states[i] = s;
      cache.remember(w.streamId, read.decider, { state: s, revision: r.nextExpectedRevision, position: r.position }, askedAt);
    });
    return { value, states, results, position: Math.max(...results.map((r) => r.position)) };
  }, options);
}

/**
 * The command handler for one stream. Commands of this process on one stream take turns (see
 * AggregateCache.enter), so they do not conflict with each other; only another process's append
 * makes one decide again. The commands that queue while a turn runs are the next turn, decided and
 * appended together (command-batch.ts); one with event ids or its own attempts takes a turn alone,
 * deciding on the state the one before it committed.
 */
export function handleCommand<C, S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, S, E>,
  command: C,
  options: HandleOptions<E> = {},
): Promise<CommandResult<S, E>> {
  const alone = (c: C, o: HandleOptions<E>) => handleAlone(store, streamId, decider, c, o);
  if (options.eventId || options.maxAttempts !== undefined) return alone(command, options);
  return batchCommand(store, streamId, decider, command, options, alone);
}

async function handleAlone<C, S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, S, E>,
  command: C,
  options: HandleOptions<E>,
): Promise<CommandResult<S, E>> {
  const cache = aggregateCache(store);
  const lane = cache.enter(streamId, decider);
  try {
    return await runCommand(store, streamId, decider, command, options, lane);
  } finally {
    lane.settle();
  }
}

async function runCommand<C, S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, S, E>,
  command: C,
  options: HandleOptions<E>,
  lane: Lane<S>,
): Promise<CommandResult<S, E>> {
  const cache = aggregateCache(store);
  // The predecessor's committed state, not yet durable: an append on it is answered only once a sync
  // covers both, but an answer without an append must first wait for the predecessor to end.
  let handed = lane.previous && (await lane.previous.committed);
  // First on the cached state without a read: a command that appends is checked by its expected
  // revision anyway. Only an answer without events (a refusal, nothing to do) is checked against the
  // store first, since no append would tell that the cache was behind (another process wrote), unless
  // the store was seen holding that state after this command came (a read or an append of a command
  // before it in the lane): then it reflects every write acknowledged before, and a busy stream's
  // commands that change nothing each answer without a round trip of their own.
  const cached = (now: Checked<S> | undefined) => now && { loaded: now, checked: now.checkedAt > lane.since };
  let next: { loaded: Loaded<S>; checked: boolean } | undefined = handed ? { loaded: handed, checked: false } : cached(cache.peek(streamId, decider));
  for (let attempt = 1; ; attempt++) {
    if (!next) await pause(RETRY.pauseMs(attempt));
    const { loaded, checked } = next ?? { loaded: await cache.load(streamId, decider, toDomain<E>), checked: true };
    next = undefined;
    const { state, revision, position } = loaded;
    const onHanded = loaded === handed;
    const stale = async () => {
      if (onHanded) {
        // Decided on a state that is not durable yet: decide again once the predecessor has ended.
        await lane.previous!.settled;
        handed = undefined;
        next = cached(cache.peek(streamId, decider));
        return true;
      }
      if (checked) return false;
      const fresh = await cache.load(streamId, decider, toDomain<E>);
      if (fresh.revision === revision) return false;
      next = { loaded: fresh, checked: true };
      return true;
    };
    let events: E[];
    try {
      events = decider.decide(command, state);
    } catch (err) {
      if (await stale()) continue;
      throw err;
    }
    if (events.length === 0) {
      if (await stale()) continue;
      return { events, state, revision, position };
    }
    let after = state;
    for (const e of events) after = decider.evolve(after, e);
    const expected = revision + events.length;
    const askedAt = instant();
    try {
      const result = await store.appendToStream(streamId, events.map((e, i) => toNew(e, i, options)), {
        expectedRevision: expectedOf(revision),
        onCommitted: (r) => lane.commit(r.nextExpectedRevision === expected ? { state: after, revision: r.nextExpectedRevision, position: r.position } : undefined),
      });
      if (result.nextExpectedRevision !== expected) {
        // An idempotent retry: the store already held these events; what it holds is the truth.
        cache.forget(streamId, decider);
        const now = await cache.load(streamId, decider, toDomain<E>);
        return { events, state: now.state, revision: now.revision, position: result.position };
      }
      cache.remember(streamId, decider, { state: after, revision: result.nextExpectedRevision, position: result.position }, askedAt);
      return { events, state: after, revision: result.nextExpectedRevision, position: result.position };
    } catch (err) {
      conflictToRetry(err, attempt, options);
      // Another process wrote. The predecessor's events become readable once it has ended.
      if (onHanded) await lane.previous!.settled;
      handed = undefined;
    }
  }
}

export function toNew<E extends DomainEvent>(e: E, i: number, options: HandleOptions<E> = {}): NewEvent {
  return { type: e.type, data: e.data, id: options.eventId?.(e, i), metadata: options.metadata };
}
