/** The shapes of the command handler (decider.ts), apart so that its parts (command-batch.ts) name them without a circle. */
import type { DomainEvent } from '../domain/events.js';
import type { Folder } from './aggregate-cache.js';

export interface Decider<C, S, E extends DomainEvent> extends Folder<S, E> {
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

export interface HandleOptions<E> {
  /** Attempts before giving up on repeated conflicts (then 503). */
  maxAttempts?: number;
  /** Metadata stored with each new event (correlation ids, the acting user). */
  metadata?: Record<string, unknown>;
  /** Gives new events deterministic ids so that a retried request appends nothing twice. */
  eventId?: (event: E, index: number) => string | undefined;
}
