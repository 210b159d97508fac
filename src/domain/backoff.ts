/**
 * The followers' backoff after a failure (a store outage, a dropped subscription): the wait before
 * retry `attempt` (from 0) doubles from `first` up to `max`. Pure, so every floor may use it.
 */
export interface Backoff {
  /** The first wait, ms. */
  first: number;
  /** The longest wait, ms. */
  max: number;
}

/** The projection runner's and the workers' backoff: 50 ms, doubling, at most 5 s. */
export const FOLLOWER_BACKOFF: Backoff = { first: 50, max: 5000 };

/** The wait before retry `attempt` (0, 1, 2, ...): first * 2^attempt, at most max. */
export const backoffMs = (attempt: number, backoff: Backoff = FOLLOWER_BACKOFF): number => Math.min(backoff.max, backoff.first * 2 ** attempt);
