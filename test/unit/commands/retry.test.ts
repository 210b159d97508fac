/** The one conflict-retry policy: conflicts retried with RETRY's pauses, anything else thrown at once, 503 when used up. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RETRY, conflictToRetry, retryOnConflict } from '../../../src/commands/retry.js';
import { WrongExpectedRevisionError } from '../../../src/gateways/event-store/port.js';
import { AppError } from '../../../src/domain/errors.js';

const conflict = () => new WrongExpectedRevisionError('s-1', 0, 1);

afterEach(() => vi.restoreAllMocks());

describe('retryOnConflict', () => {
  it('answers the first attempt that does not conflict, giving each attempt its number', async () => {
    const seen: number[] = [];
    const value = await retryOnConflict(async (attempt) => {
      seen.push(attempt);
      if (attempt < 3) throw conflict();
      return 'done';
    });
    expect(value).toBe('done');
    expect(seen).toEqual([1, 2, 3]);
  });

  it('throws any other error at once, without another attempt', async () => {
    let calls = 0;
    const boom = new Error('boom');
    await expect(
      retryOnConflict(async () => {
        calls++;
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(calls).toBe(1);
  });

  it('gives up after RETRY.maxAttempts conflicts with a 503 UNAVAILABLE naming the stream', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0); // no pauses: the count is what is under test
    let calls = 0;
    const err = await retryOnConflict(async () => {
      calls++;
      throw conflict();
    }).catch((e: unknown) => e);
    expect(calls).toBe(RETRY.maxAttempts);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', status: 503 });
    expect((err as Error).message).toContain('s-1');
  });

  it('keeps to maxAttempts and giveUp when given', async () => {
    let calls = 0;
    const err = await retryOnConflict(
      async () => {
        calls++;
        throw conflict();
      },
      { maxAttempts: 3, giveUp: (c) => new Error(`gave up on ${c.streamId}`) },
    ).catch((e: unknown) => e);
    expect(calls).toBe(3);
    expect((err as Error).message).toBe('gave up on s-1');
  });

  it('pauses RETRY.pauseMs(n) before attempt n, none before the first', async () => {
    vi.useFakeTimers();
    try {
      vi.spyOn(Math, 'random').mockReturnValue(1);
      const started: number[] = [];
      const t0 = Date.now();
      const run = retryOnConflict(async (attempt) => {
        started.push(Date.now() - t0);
        if (attempt < 3) throw conflict();
        return attempt;
      });
      await vi.runAllTimersAsync();
      expect(await run).toBe(3);
      // RETRY.pauseMs with Math.random() = 1: attempt 2 waits min(50, 4), attempt 3 min(50, 8) more.
      expect(started).toEqual([0, 4, 12]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('RETRY.pauseMs', () => {
  it('is 0 before the first attempt and random under min(50, 2^n) after', () => {
    expect(RETRY.pauseMs(1)).toBe(0);
    for (let n = 2; n <= 12; n++) {
      const ms = RETRY.pauseMs(n);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThan(Math.min(50, 2 ** n));
    }
  });
});

describe('conflictToRetry', () => {
  it('returns a conflict while attempts remain, rethrows other errors, and 503s on the last attempt', () => {
    const c = conflict();
    expect(conflictToRetry(c, 1)).toBe(c);
    const other = new TypeError('x');
    expect(() => conflictToRetry(other, 1)).toThrow(other);
    expect(() => conflictToRetry(c, RETRY.maxAttempts)).toThrow(/too much contention on s-1/);
    expect(() => conflictToRetry(c, 2, { maxAttempts: 2 })).toThrow(AppError);
  });
});
