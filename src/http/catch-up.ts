/**
 * Read-your-writes for every request (CONTRACT section 2) at the cost of one `caughtUp()` per turn of
 * the event loop instead of one per request: the requests that arrive in one turn wait together, and
 * each goes on by a plain callback (no promise of its own on the hot path).
 *
 * The batch's `caughtUp()` is asked in a setImmediate queued when the batch opens, so it runs after
 * every request of the batch has arrived: whatever it reads as the log's head covers them all.
 */
import type { ReadSync } from '../projections/read-sync.js';

export type Resume = (err?: unknown) => void;

/** `onError`: a request's own continuation threw (a fault of the framework); the others still go on. */
export function catchUpBatches(sync: Pick<ReadSync, 'caughtUp'>, onError: (err: unknown) => void): (resume: Resume) => void {
  let batch: Resume[] | null = null;
  const settle = (waiting: Resume[], err?: unknown) => {
    for (const resume of waiting) {
      try {
        resume(err);
      } catch (thrown) {
        onError(thrown);
      }
    }
  };
  return (resume) => {
    if (batch) {
      batch.push(resume);
      return;
    }
    const waiting = (batch = [resume]);
    setImmediate(() => {
      batch = null;
      sync.caughtUp().then(
        () => settle(waiting),
        (err: unknown) => settle(waiting, err ?? new Error('read models did not catch up')),
      );
    });
  };
}
