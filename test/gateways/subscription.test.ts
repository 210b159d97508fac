/** The helpers adapters build subscriptions from (the contract covers them through the adapters). */
import { describe, expect, it } from 'vitest';
import { gatheredBatches } from '../../src/gateways/event-store/subscription.js';

/** A gate a source waits on; `open()` lets it go on. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

async function collect<T>(batches: AsyncIterable<readonly T[]>): Promise<T[][]> {
  const out: T[][] = [];
  for await (const b of batches) out.push([...b]);
  return out;
}

describe('gatheredBatches', () => {
  it('gathers the events that arrive in one turn, and starts a new batch for what comes later', async () => {
    const later = gate();
    async function* source() {
      yield 1;
      yield 2;
      yield 3;
      await later.opened;
      yield 4;
      yield 5;
    }
    let closes = 0;
    const it = gatheredBatches(source(), () => closes++)[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ done: false, value: [1, 2, 3] });
    later.open();
    expect(await it.next()).toEqual({ done: false, value: [4, 5] });
    expect((await it.next()).done).toBe(true);
    expect(closes).toBe(1);
  });

  it('closes the source when the consumer leaves early', async () => {
    const never = gate();
    let closed = false;
    async function* source() {
      yield 'a';
      await never.opened;
      yield 'b';
    }
    for await (const batch of gatheredBatches(source(), () => {
      closed = true;
      never.open();
    })) {
      expect(batch).toEqual(['a']);
      break;
    }
    expect(closed).toBe(true);
  });

  it('delivers what was gathered before a failure, then throws it', async () => {
    async function* source() {
      yield 1;
      yield 2;
      throw new Error('dropped');
    }
    const got: number[][] = [];
    await expect(
      (async () => {
        for await (const b of gatheredBatches(source(), () => {})) got.push([...b]);
      })(),
    ).rejects.toThrow('dropped');
    expect(got).toEqual([[1, 2]]);
  });

  it('an empty source yields no batch', async () => {
    async function* source(): AsyncGenerator<number> {}
    expect(await collect(gatheredBatches(source(), () => {}))).toEqual([]);
  });
});
