/** follow(): at-least-once handling from a checkpoint; with concurrency, handlers overlap but the checkpoint passes only finished events. */
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { CHECKPOINT_EVERY_MS, follow } from '../../src/workers/follower.js';
import type { Context } from '../../src/context.js';
import { until } from '../support/until.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

function context() {
  const events = new SqliteEventStore(':memory:');
  const reads = new SqliteReadStore(':memory:');
  open.push(events, reads);
  return { events, reads, ctx: { events, reads, logger: pino({ level: 'silent' }) } as unknown as Context };
}

describe('follow', () => {
  it('with concurrency, runs handlers at once; the checkpoint never passes an event whose handler has not finished', async () => {
    const { events, reads, ctx } = context();
    for (let i = 0; i < 6; i++) await events.appendToStream(`s-${i}`, [{ type: i === 3 ? 'AgentLoggedIn' : 'SmsRequested', data: { i } }]);
    const release = new Map<number, () => void>();
    const started: number[] = [];
    const follower = await follow(
      ctx,
      'test',
      ['SmsRequested'],
      (e) =>
        new Promise<void>((resolve) => {
          started.push(e.position);
          release.set(e.position, resolve);
        }),
      { concurrency: 3 },
    );
    // Three at once (positions 1, 2, 3), the fourth waits for a slot.
    await until(() => started.length === 3, 'three handlers to start');
    expect(started).toEqual([1, 2, 3]);
    release.get(2)!();
    release.get(3)!();
    // Two slots free: 5 and 6 start (4 is not wanted); 1 still runs, so the checkpoint stays before it.
    await until(() => started.length === 5, 'the handlers of 5 and 6 to start');
    expect(started).toEqual([1, 2, 3, 5, 6]);
    expect(follower.position).toBe(0);
    release.get(1)!();
    await until(() => follower.position === 4, 'the checkpoint to pass 1 to 4');
    release.get(6)!();
    release.get(5)!();
    await until(() => follower.position === 6, 'the checkpoint to reach the end');
    await follower.stop();
    expect(await reads.checkpoint('worker:test')).toBe(6);
  });

  it('a held event keeps the checkpoint until what it holds settles, without holding a slot; a hold that rejects handles the event again', async () => {
    const { events, ctx } = context();
    for (let i = 0; i < 4; i++) await events.appendToStream(`s-${i}`, [{ type: 'SmsRequested', data: { i } }]);
    const handled: number[] = [];
    let release!: () => void;
    let fail!: (err: Error) => void;
    const follower = await follow(
      ctx,
      'held',
      ['SmsRequested'],
      async (e, hold) => {
        handled.push(e.position);
        // Position 1 holds its checkpoint twice over: once on work that fails, then on work that ends.
        if (e.position !== 1) return;
        const times = handled.filter((p) => p === 1).length;
        hold(new Promise<void>((resolve, reject) => (times === 1 ? (fail = reject) : (release = resolve))));
      },
      { concurrency: 1 },
    );
    // With one slot, 2 to 4 are handled while 1's work runs: its handler returned, its slot is free.
    await until(() => handled.length === 4, 'every event handled');
    expect(handled).toEqual([1, 2, 3, 4]);
    expect(follower.position).toBe(0);
    // The work fails: the event is handled again, and holds the checkpoint again.
    fail(new Error('lost'));
    await until(() => handled.length === 5, 'the held event handled again');
    expect(handled.at(-1)).toBe(1);
    expect(follower.position).toBe(0);
    release();
    await until(() => follower.position === 4, 'the checkpoint to pass the held event and the ones after it');
    await follower.stop();
  });

  it('stores its checkpoint a few times a second, not once per event, and the exact position at stop', async () => {
    const { events, reads, ctx } = context();
    let commits = 0;
    const commit = reads.commit.bind(reads);
    reads.commit = (writes, checkpoints) => {
      if ('worker:batch' in checkpoints) commits++;
      return commit(writes, checkpoints);
    };
    const follower = await follow(ctx, 'batch', ['SmsRequested'], async () => {});
    const started = Date.now();
    for (let i = 0; i < 200; i++) await events.appendToStream(`s-${i}`, [{ type: 'SmsRequested', data: { i } }]);
    await until(() => follower.position === 200, 'every event handled');
    // The stored checkpoint follows within the bound, in far fewer writes than events.
    await until(async () => (await reads.checkpoint('worker:batch')) === 200, 'the checkpoint to be stored');
    expect(commits).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / CHECKPOINT_EVERY_MS) + 1);
    expect(commits).toBeLessThan(200);
    await events.appendToStream('last', [{ type: 'SmsRequested', data: {} }]);
    await until(() => follower.position === 201, 'the last event handled');
    await follower.stop();
    expect(await reads.checkpoint('worker:batch')).toBe(201);
  });
});
