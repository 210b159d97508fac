/**
 * The one conflict-retry policy of every command path. A conflict (WrongExpectedRevisionError) means
 * another writer appended first; the command is decided again on fresh state (deciders are pure, so
 * that is always safe), after a short random pause. One that keeps conflicting ends in the contract's
 * 503 UNAVAILABLE: never a silent give-up, never a 500.
 *
 * `retryOnConflict` is the loop for a command that starts afresh on each attempt (Emmett's shape);
 * `handleCommand` and the call flow's `runSteps` carry state between attempts (cached or handed-on
 * aggregates), so they run their own loop on the same pieces: `RETRY`, `pause` and `conflictToRetry`.
 */
import { WrongExpectedRevisionError } from '../gateways/event-store/port.js';
import { unavailable } from '../domain/errors.js';

/** The policy: attempts, and the pause before attempt n (random, growing, small: under 50 ms). */
export const RETRY = {
  maxAttempts: 10,
  pauseMs: (attempt: number) => (attempt <= 1 ? 0 : Math.random() * Math.min(50, 2 ** attempt)),
};

export interface RetryOptions {
  /** Attempts before giving up on repeated conflicts (RETRY.maxAttempts unless given). */
  maxAttempts?: number;
  /** The error thrown when the attempts are used up; a 503 UNAVAILABLE naming the stream unless given. */
  giveUp?: (conflict: WrongExpectedRevisionError) => Error;
}

/** Waits `ms`; no timer (and no turn of the event loop beyond a resolved promise) for 0. */
export const pause = (ms: number): Promise<void> => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

/**
 * What a command loop does with an error of attempt `attempt`: returns the conflict when another
 * attempt is due; rethrows anything else, and gives up (503, or `giveUp`) on the last attempt.
 */
export function conflictToRetry(err: unknown, attempt: number, options: RetryOptions = {}): WrongExpectedRevisionError {
  if (!(err instanceof WrongExpectedRevisionError)) throw err;
  if (attempt >= (options.maxAttempts ?? RETRY.maxAttempts)) throw options.giveUp?.(err) ?? unavailable(`too much contention on ${err.streamId}; try again`);
  return err;
}

/** Runs `fn` (given its attempt, from 1) again on each conflict, pausing RETRY.pauseMs(attempt) before attempt n. */
export async function retryOnConflict<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) await pause(RETRY.pauseMs(attempt));
    try {
      return await fn(attempt);
    } catch (err) {
      conflictToRetry(err, attempt, options);
    }
  }
}
