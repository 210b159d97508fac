/** PositionWaiters: one timer for all waiters; each still times out on its own deadline. */
import { describe, expect, it } from 'vitest';
import { PositionWaiters } from '../../../src/projections/position-waiters.js';

describe('PositionWaiters', () => {
  it('resolves waiters as the position reaches them, and only those', async () => {
    const w = new PositionWaiters();
    const done: number[] = [];
    const waits = [3, 1, 2, 5].map((p) => w.wait(p, 10_000).then(() => done.push(p)));
    w.advance(2);
    await Promise.resolve();
    await Promise.resolve();
    expect(done.sort()).toEqual([1, 2]);
    w.advance(5);
    await Promise.all(waits);
    expect(done.sort()).toEqual([1, 2, 3, 5]);
    await expect(w.wait(4, 10)).resolves.toBeUndefined();
  });

  it('a short wait times out with UNAVAILABLE while a longer one behind it still resolves', async () => {
    const w = new PositionWaiters();
    const long = w.wait(7, 10_000);
    const short = w.wait(9, 20);
    await expect(short).rejects.toMatchObject({ code: 'UNAVAILABLE', status: 503 });
    w.advance(7);
    await expect(long).resolves.toBeUndefined();
  });

  it('fail rejects every waiter', async () => {
    const w = new PositionWaiters();
    const a = w.wait(1, 10_000);
    const b = w.wait(2, 10_000);
    w.fail(new Error('subscription failed'));
    await expect(a).rejects.toThrow('subscription failed');
    await expect(b).rejects.toThrow('subscription failed');
  });
});
