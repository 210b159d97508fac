/** The followers' backoff: doubling from `first`, capped at `max`. */
import { describe, expect, it } from 'vitest';
import { FOLLOWER_BACKOFF, backoffMs } from '../../../src/domain/backoff.js';

describe('backoffMs', () => {
  it('doubles from 50 ms up to 5 s by default (the projection runner and the workers)', () => {
    expect(FOLLOWER_BACKOFF).toEqual({ first: 50, max: 5000 });
    expect([0, 1, 2, 3, 6, 7, 20].map((n) => backoffMs(n))).toEqual([50, 100, 200, 400, 3200, 5000, 5000]);
  });

  it('keeps to the given first wait and cap', () => {
    const b = { first: 100, max: 2000 };
    expect([0, 1, 4, 5, 30].map((n) => backoffMs(n, b))).toEqual([100, 200, 1600, 2000, 2000]);
  });

  it('never shrinks as the attempts grow', () => {
    let last = 0;
    for (let n = 0; n < 64; n++) {
      const ms = backoffMs(n);
      expect(ms).toBeGreaterThanOrEqual(last);
      last = ms;
    }
  });
});
