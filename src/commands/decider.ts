/**
 * Deciders and the one generic command handler: read the stream, fold it into state, decide,
 * append with the expected revision. A conflict means someone else wrote first; the command is
 * decided again on fresh state (deciders are pure, so that is always safe for them).
 */
import type { EventStore, ExpectedRevision, NewEvent, RecordedEvent } from '../gateways/event-store/port.js';
import { WrongExpectedRevisionError } from '../gateways/event-store/port.js';
import { unavailable } from '../domain/errors.js';

export interface DomainEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

export interface Decider<C, S, E extends DomainEvent> {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
  /** Events the command causes; throws an AppError when the state forbids it. */
  decide: (command: C, state: S) => E[];
}

export interface CommandResult<S, E> {
  events: E[];
  state: S;
  /** Revision of the stream's last event after the command. */
  revision: number;
  /** Global position of the last event (or the stream's last event when nothing was appended). */
  position: number;
}

export function fold<S, E extends DomainEvent>(decider: Pick<Decider<unknown, S, E>, 'initialState' | 'evolve'>, events: Iterable<E>): S {
  let state = decider.initialState();
  for (const e of events) state = decider.evolve(state, e);
  return state;
}

export const toDomain = <E extends DomainEvent>(e: RecordedEvent): E => ({ type: e.type, data: e.data }) as E;

/** The revision to expect when appending after these events. */
export const expectedAfter = (recorded: RecordedEvent[]): ExpectedRevision => (recorded.length ? recorded[recorded.length - 1]!.revision : 'no_stream');

/** A stream folded into state, with the revision to expect when appending after it. */
export async function loadAggregate<S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Pick<Decider<unknown, S, E>, 'initialState' | 'evolve'>,
): Promise<{ state: S; expected: ExpectedRevision }> {
  const recorded = await store.readStream(streamId);
  return { state: fold(decider, recorded.map((e) => toDomain<E>(e))), expected: expectedAfter(recorded) };
}

export interface HandleOptions<E> {
  /** Attempts before giving up on repeated conflicts. */
  maxAttempts?: number;
  /** Metadata stored with each new event (correlation ids, the acting user). */
  metadata?: Record<string, unknown>;
  /** Gives new events deterministic ids so that a retried request appends nothing twice. */
  eventId?: (event: E, index: number) => string | undefined;
}

export async function handleCommand<C, S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, S, E>,
  command: C,
  options: HandleOptions<E> = {},
): Promise<CommandResult<S, E>> {
  const maxAttempts = options.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const recorded = await store.readStream(streamId);
    const revision = recorded.length ? recorded[recorded.length - 1]!.revision : -1;
    let state = fold(decider, recorded.map((e) => toDomain<E>(e)));
    const events = decider.decide(command, state);
    if (events.length === 0) {
      return { events, state, revision, position: recorded.length ? recorded[recorded.length - 1]!.position : 0 };
    }
    try {
      const result = await store.appendToStream(streamId, events.map((e, i) => toNew(e, i, options)), {
        expectedRevision: recorded.length ? revision : 'no_stream',
      });
      for (const e of events) state = decider.evolve(state, e);
      return { events, state, revision: result.nextExpectedRevision, position: result.position };
    } catch (err) {
      if (err instanceof WrongExpectedRevisionError && attempt < maxAttempts) continue;
      if (err instanceof WrongExpectedRevisionError) throw unavailable(`too much contention on ${streamId}; try again`);
      throw err;
    }
  }
}

export function toNew<E extends DomainEvent>(e: E, i: number, options: HandleOptions<E> = {}): NewEvent {
  return { type: e.type, data: e.data, id: options.eventId?.(e, i), metadata: options.metadata };
}
