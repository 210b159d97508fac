/**
 * Whole answers of the hot queries (dashboard, agent lists), kept with a stamp of the read models
 * they were computed from and served again while the stamp holds: any write to one of those
 * collections moves the stamp, so a kept answer is never older than the last projected write, and
 * read-your-writes (the request waited for the projector first) carries over to it.
 *
 * Only where the read models are hot (the projector's process): there every write passes the hot
 * store, which counts them per collection. Elsewhere `answerCache` is null and every request computes.
 * What moves with the clock is the caller's to check (see `dashboardCached`).
 */
import type { ReadStore } from '../gateways/read-store/port.js';

/** A read store that counts the writes to each collection (the hot read models). */
export interface CountedWrites {
  version(collection: string): number;
}

/** Answers kept per read store; past this many the oldest goes. */
const MAX_ANSWERS = 500;

export class AnswerCache {
  private readonly answers = new Map<string, { stamp: number; value: unknown }>();

  constructor(private readonly reads: CountedWrites) {}

  /**
   * The state of `collections` now: take it before reading them for an answer. Counters only grow,
   * so their sum moves with any write to any of them.
   */
  stamp(collections: readonly string[]): number {
    let sum = 0;
    for (const c of collections) sum += this.reads.version(c);
    return sum;
  }

  /** The answer kept under `key`, if none of `collections` was written since it was computed. */
  get<T>(key: string, collections: readonly string[]): T | undefined {
    const kept = this.answers.get(key);
    if (kept === undefined) return undefined;
    if (kept.stamp !== this.stamp(collections)) {
      this.answers.delete(key);
      return undefined;
    }
    return kept.value as T;
  }

  /** Keeps an answer computed from the collections as they stood at `stamp`. */
  set(key: string, stamp: number, value: unknown): void {
    this.answers.delete(key);
    if (this.answers.size >= MAX_ANSWERS) this.answers.delete(this.answers.keys().next().value!);
    this.answers.set(key, { stamp, value });
  }
}

const caches = new WeakMap<ReadStore, AnswerCache | null>();

/** The answer cache of a read store, or null when its writes are not counted (not hot). */
export function answerCache(reads: ReadStore): AnswerCache | null {
  let cache = caches.get(reads);
  if (cache === undefined) {
    const counted = typeof (reads as Partial<CountedWrites>).version === 'function' ? (reads as unknown as CountedWrites) : null;
    cache = counted ? new AnswerCache(counted) : null;
    caches.set(reads, cache);
  }
  return cache;
}
