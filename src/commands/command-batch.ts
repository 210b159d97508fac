/**
 * Commands of this process on one stream, decided and appended together (handleCommand's usual path).
 *
 * Commands on one stream take turns (AggregateCache.enter). One at a time, each took a round trip
 * of its own: on a networked store a busy stream (50 connections toggling one agent's break) then
 * ran at one command per round trip, and how many of them appended (a group commit of one each)
 * hung on the order their targets happened to queue in. Here the commands that queued while the
 * stream's last turn ran are one turn: decided in order, each on the state the one before left, and
 * their events appended at once, against the revision the first decided on. That append stores all
 * or none (a conflict decides them all again on fresh state), so each command's answer holds as if
 * it had run alone, in its place in the queue; one whose events the store refuses for another reason
 * fails alone (they are then run one by one).
 */
import { WrongExpectedRevisionError, type EventStore, type NewEvent } from '../gateways/event-store/port.js';
import { RETRY, conflictToRetry, pause } from './retry.js';
import { aggregateCache, instant, type AggregateCache, type Loaded } from './aggregate-cache.js';
import type { DomainEvent } from '../domain/events.js';
import type { CommandResult, Decider, HandleOptions } from './command-types.js';

/** Commands one turn decides at most (their events go in one append). */
export const MAX_BATCH = 100;

interface Queued<C, S, E> {
  command: C;
  options: HandleOptions<E>;
  resolve: (r: CommandResult<S, E>) => void;
  reject: (err: unknown) => void;
}

interface Queue {
  waiting: Queued<any, any, any>[];
  /** When the first of `waiting` came (`instant()`). */
  since: number;
  running: boolean;
}

/** Per cache, per stream, per decider: the commands waiting for the stream's next turn. */
const queues = new WeakMap<AggregateCache, Map<string, Map<object, Queue>>>();

/**
 * Queues a command for its stream's next turn. `alone` runs one command on its own (with a turn of
 * its own): for the commands of a turn whose append failed for a reason other than a conflict.
 */
export function batchCommand<C, S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, S, E>,
  command: C,
  options: HandleOptions<E>,
  alone: (command: C, options: HandleOptions<E>) => Promise<CommandResult<S, E>>,
): Promise<CommandResult<S, E>> {
  const cache = aggregateCache(store);
  let byStream = queues.get(cache);
  if (!byStream) queues.set(cache, (byStream = new Map()));
  let byDecider = byStream.get(streamId);
  if (!byDecider) byStream.set(streamId, (byDecider = new Map()));
  let queue = byDecider.get(decider);
  if (!queue) byDecider.set(decider, (queue = { waiting: [], since: 0, running: false }));
  const q = queue;
  return new Promise<CommandResult<S, E>>((resolve, reject) => {
    if (q.waiting.length === 0) q.since = instant();
    q.waiting.push({ command, options, resolve, reject });
    if (q.running) return;
    q.running = true;
    void (async () => {
      try {
        while (q.waiting.length > 0) {
          const since = q.since;
          const batch = q.waiting.splice(0, MAX_BATCH) as Queued<C, S, E>[];
          q.since = instant(); // those left came before now
          const lane = cache.enter(streamId, decider);
          let apart: Queued<C, S, E>[] = [];
          try {
            if (lane.previous) await lane.previous.settled;
            apart = await runTurn(store, cache, streamId, decider, batch, since);
          } catch (err) {
            for (const c of batch) c.reject(err);
          } finally {
            lane.settle();
          }
          // Each in a turn of its own, after this one (entered now, before the next batch's).
          for (const c of apart) alone(c.command, c.options).then(c.resolve, c.reject);
        }
      } finally {
        q.running = false;
        byDecider.delete(decider);
        if (byDecider.size === 0) byStream.delete(streamId);
      }
    })();
  });
}

type Outcome<S, E> = { events: E[]; state: S; revision: number } | { err: unknown };

/**
 * One turn: decide every command of `batch` in order, append their events at once, answer each.
 * Returns the commands to run alone instead (their append failed for another reason than a conflict).
 */
async function runTurn<C, S, E extends DomainEvent>(
  store: EventStore,
  cache: AggregateCache,
  streamId: string,
  decider: Decider<C, S, E>,
  batch: Queued<C, S, E>[],
  since: number,
): Promise<Queued<C, S, E>[]> {
  const toDomain = (e: { type: string; data: unknown }) => ({ type: e.type, data: e.data }) as E;
  // First on the cached state without a read: an append is checked by its expected revision. A turn
  // that appends nothing is checked against the store first, unless the store was seen holding the
  // state after the turn's first command came (see Checked in aggregate-cache.ts).
  const peeked = cache.peek(streamId, decider);
  let next: { loaded: Loaded<S>; checked: boolean } | undefined = peeked && { loaded: peeked, checked: peeked.checkedAt > since };
  for (let attempt = 1; ; attempt++) {
    if (!next) await pause(RETRY.pauseMs(attempt));
    const { loaded, checked } = next ?? { loaded: await cache.load(streamId, decider, toDomain), checked: true };
    next = undefined;
    let state = loaded.state;
    let revision = loaded.revision;
    const events: NewEvent[] = [];
    const outcomes: Outcome<S, E>[] = batch.map((c) => {
      try {
        const decided = decider.decide(c.command, state);
        decided.forEach((e, i) => {
          state = decider.evolve(state, e);
          events.push({ type: e.type, data: e.data, id: c.options.eventId?.(e, i), metadata: c.options.metadata });
        });
        revision += decided.length;
        return { events: decided, state, revision };
      } catch (err) {
        return { err };
      }
    });
    const answer = (position: number) =>
      batch.forEach((c, i) => {
        const o = outcomes[i]!;
        if ('err' in o) c.reject(o.err);
        else c.resolve({ events: o.events, state: o.state, revision: o.revision, position });
      });
    if (events.length === 0) {
      if (!checked) {
        const fresh = await cache.load(streamId, decider, toDomain);
        if (fresh.revision !== loaded.revision) {
          next = { loaded: fresh, checked: true };
          continue;
        }
      }
      answer(loaded.position);
      return [];
    }
    const askedAt = instant();
    let result;
    try {
      result = await store.appendToStream(streamId, events, { expectedRevision: loaded.revision >= 0 ? loaded.revision : 'no_stream' });
    } catch (err) {
      if (err instanceof WrongExpectedRevisionError) {
        // Another process wrote: all of them again, on what it stored. The last attempt's 503 goes to each.
        conflictToRetry(err, attempt);
        continue;
      }
      if (batch.length === 1) throw err;
      // Something the store would not take (a value, an event id): each alone, so it fails alone.
      return batch;
    }
    if (result.nextExpectedRevision !== revision) {
      // An idempotent retry (event ids the store already held): what it holds is the truth.
      cache.forget(streamId, decider);
      const now = await cache.load(streamId, decider, toDomain);
      batch.forEach((c, i) => {
        const o = outcomes[i]!;
        if ('err' in o) c.reject(o.err);
        else c.resolve({ events: o.events, state: now.state, revision: now.revision, position: result.position });
      });
      return [];
    }
    cache.remember(streamId, decider, { state, revision, position: result.position }, askedAt);
    answer(result.position);
    return [];
  }
}
