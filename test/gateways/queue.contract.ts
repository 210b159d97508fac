/** One contract for every JobQueue adapter (src/gateways/queue/port.ts). */
import { afterEach, describe, expect, it } from 'vitest';
import { PermanentJobError, type Job, type JobQueue } from '../../src/gateways/queue/port.js';
import { until } from '../support/until.js';

export type TestQueue = JobQueue & { abandon(): void | Promise<void> };

export interface QueueHarness {
  /**
   * Opens an adapter on the durable store called `name`: opening the same name again sees the same
   * jobs, as a restarted process would. Adapters are tuned for tests: short polls, short leases.
   */
  open(name: string): Promise<TestQueue>;
}

let seq = 0;
const unique = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

export function jobQueueContract(adapter: string, harness: QueueHarness) {
  describe(`JobQueue contract: ${adapter}`, () => {
    const opened: TestQueue[] = [];
    const open = async (name: string) => {
      const q = await harness.open(name);
      opened.push(q);
      return q;
    };
    afterEach(async () => {
      await Promise.allSettled(opened.splice(0).map((q) => q.close()));
    });

    it('runs an enqueued job with its payload and marks it completed', async () => {
      const q = await open(unique('run'));
      const seen: Job[] = [];
      q.process('mail', async (job) => {
        seen.push(job);
      });
      await q.enqueue('mail', { id: 'a:1', payload: { to: 'x', n: [1, 2] } });
      await until(() => seen.length === 1, 'the job');
      expect(seen[0]).toMatchObject({ queue: 'mail', id: 'a:1', payload: { to: 'x', n: [1, 2] }, attempt: 1, maxAttempts: 1 });
      await until(async () => (await q.getJob('mail', 'a:1'))?.state === 'completed', 'completed state');
      expect(await q.getJob('mail', 'a:1')).toMatchObject({ state: 'completed', attempts: 1, payload: { to: 'x', n: [1, 2] } });
      expect(await q.getJob('mail', 'nope')).toBeNull();
    });

    it('keeps named queues apart', async () => {
      const q = await open(unique('names'));
      const a: string[] = [];
      const b: string[] = [];
      q.process('a', async (j) => void a.push(j.id));
      q.process('b', async (j) => void b.push(j.id));
      await q.enqueue('a', { id: 'same', payload: 1 });
      await q.enqueue('b', { id: 'same', payload: 2 });
      await until(() => a.length === 1 && b.length === 1, 'both jobs');
    });

    it('counts the jobs waiting per queue, due and delayed, until they run', async () => {
      const q = await open(unique('counts'));
      await q.enqueue('w', { id: 'due', payload: 1 });
      await q.enqueue('w', { id: 'later', payload: 2, delayMs: 60_000 });
      await q.enqueue('x', { id: 'other', payload: 3 });
      expect(await q.waitingCounts(['w', 'x', 'empty'])).toEqual({ w: 2, x: 1, empty: 0 });
      q.process('x', async () => {});
      await until(async () => (await q.waitingCounts(['x'])).x === 0, 'the x job to leave the waiting count');
      expect((await q.waitingCounts(['w'])).w).toBe(2);
    });

    it('dedupes by id: enqueuing an existing id, waiting or completed, is a no-op', async () => {
      const q = await open(unique('dedupe'));
      await q.enqueue('d', { id: 'one', payload: 'first' });
      await q.enqueue('d', { id: 'one', payload: 'second' });
      const runs: unknown[] = [];
      q.process('d', async (j) => void runs.push(j.payload));
      await until(async () => (await q.getJob('d', 'one'))?.state === 'completed', 'completion');
      await q.enqueue('d', { id: 'one', payload: 'third' });
      await q.enqueue('d', { id: 'marker', payload: 'marker' });
      await until(() => runs.includes('marker'), 'a later job');
      expect(runs).toEqual(['first', 'marker']);
    });

    it('runs a delayed job no earlier than asked, by delayMs or runAt', async () => {
      const q = await open(unique('delay'));
      const ran = new Map<string, number>();
      q.process('t', async (j) => void ran.set(j.id, Date.now()));
      const t0 = Date.now();
      await q.enqueue('t', { id: 'by-delay', payload: null, delayMs: 300 });
      await q.enqueue('t', { id: 'by-time', payload: null, runAt: t0 + 400 });
      await q.enqueue('t', { id: 'now', payload: null });
      expect(['delayed', 'waiting']).toContain((await q.getJob('t', 'by-time'))?.state);
      await until(() => ran.size === 3, 'all three jobs');
      // The due job runs first; how soon is load's business, not this contract's (no upper bound under a loaded CI).
      expect(ran.get('now')!).toBeLessThanOrEqual(ran.get('by-delay')!);
      expect(ran.get('by-delay')! - t0).toBeGreaterThanOrEqual(295);
      expect(ran.get('by-time')! - t0).toBeGreaterThanOrEqual(395);
    });

    it('retries on the given delay schedule and succeeds on a later attempt', async () => {
      const q = await open(unique('retry'));
      const attempts: { attempt: number; at: number }[] = [];
      q.process('r', async (j) => {
        attempts.push({ attempt: j.attempt, at: Date.now() });
        if (attempts.length < 3) throw new Error(`boom ${attempts.length}`);
      });
      await q.enqueue('r', { id: 'x', payload: {}, backoffMs: [100, 200, 5000] });
      await until(async () => (await q.getJob('r', 'x'))?.state === 'completed', 'completion after retries');
      expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(95);
      expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(195);
      expect((await q.getJob('r', 'x'))!.attempts).toBe(3);
    });

    it('ends failed, inspectable with the last error, after the last retry', async () => {
      const q = await open(unique('fail'));
      let runs = 0;
      q.process('f', async (j) => {
        runs++;
        expect(j.maxAttempts).toBe(3);
        throw new Error(`refused ${j.attempt}`);
      });
      await q.enqueue('f', { id: 'doomed', payload: 1, backoffMs: [20, 20] });
      const info = await until(async () => {
        const j = await q.getJob('f', 'doomed');
        return j?.state === 'failed' ? j : undefined;
      }, 'failed state');
      expect(info).toMatchObject({ attempts: 3, lastError: 'refused 3', payload: 1 });
      expect(runs).toBe(3);
      // A failed id stays taken.
      await q.enqueue('f', { id: 'doomed', payload: 2, backoffMs: [20, 20] });
      expect((await q.getJob('f', 'doomed'))!.state).toBe('failed');
    });

    it('fails at once on a PermanentJobError', async () => {
      const q = await open(unique('perm'));
      let runs = 0;
      q.process('p', async () => {
        runs++;
        throw new PermanentJobError('no point retrying');
      });
      await q.enqueue('p', { id: 'x', payload: null, backoffMs: [10, 10, 10] });
      await until(async () => (await q.getJob('p', 'x'))?.state === 'failed', 'failed');
      expect(runs).toBe(1);
      expect((await q.getJob('p', 'x'))!.lastError).toBe('no point retrying');
    });

    it('runs at most `concurrency` jobs at once, and uses that many', async () => {
      const q = await open(unique('conc'));
      let running = 0;
      let peak = 0;
      let done = 0;
      q.process(
        'c',
        async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 80));
          running--;
          done++;
        },
        { concurrency: 3 },
      );
      for (let i = 0; i < 9; i++) await q.enqueue('c', { id: `j${i}`, payload: i });
      await until(() => done === 9, 'nine jobs');
      expect(peak).toBe(3);
    });

    it('restart: a job enqueued before a restart runs once after it, a delayed one on time', async () => {
      const name = unique('restart');
      const a = await open(name);
      const t0 = Date.now();
      await a.enqueue('s', { id: 'now', payload: 'n' });
      await a.enqueue('s', { id: 'later', payload: 'l', delayMs: 400 });
      await a.close();
      const b = await open(name);
      const runs: { id: string; at: number }[] = [];
      b.process('s', async (j) => void runs.push({ id: j.id, at: Date.now() }));
      await until(() => runs.length === 2, 'both jobs after the restart');
      expect(runs.map((r) => r.id)).toEqual(['now', 'later']);
      expect(runs[1]!.at - t0).toBeGreaterThanOrEqual(395);
      await until(async () => (await b.getJob('s', 'later'))?.state === 'completed', 'completion');
      await b.close();
      // And a completed job is never run again, nor re-enqueued, after another restart.
      const c = await open(name);
      const again: string[] = [];
      c.process('s', async (j) => void again.push(j.id));
      await c.enqueue('s', { id: 'now', payload: 'n' });
      await c.enqueue('s', { id: 'marker', payload: 'm' });
      await until(() => again.includes('marker'), 'the marker job');
      expect(again).toEqual(['marker']);
    });

    it('restart: a retry pending at the restart runs after it, on the remaining schedule', async () => {
      const name = unique('restart-retry');
      const a = await open(name);
      let firstRuns = 0;
      a.process('rr', async () => {
        firstRuns++;
        throw new Error('down');
      });
      await a.enqueue('rr', { id: 'x', payload: null, backoffMs: [300, 5000] });
      await until(() => firstRuns === 1, 'the first attempt');
      await until(async () => (await a.getJob('rr', 'x'))?.state === 'delayed', 'the retry scheduled');
      await a.close();
      const b = await open(name);
      const attempts: number[] = [];
      b.process('rr', async (j) => void attempts.push(j.attempt));
      await until(async () => (await b.getJob('rr', 'x'))?.state === 'completed', 'completion after restart');
      expect(attempts).toEqual([2]);
    });

    it('crash: a job interrupted mid-run runs again after the crash, and only its late finish is ignored', async () => {
      const name = unique('crash');
      const a = await open(name);
      let release!: () => void;
      const started: number[] = [];
      a.process('k', async (j) => {
        started.push(j.attempt);
        await new Promise<void>((r) => (release = r));
      });
      await a.enqueue('k', { id: 'x', payload: 'p' });
      await until(() => started.length === 1, 'the first run');
      await a.abandon();
      const b = await open(name);
      const second: Job[] = [];
      b.process('k', async (j) => void second.push(j));
      await until(() => second.length === 1, 'the interrupted job run again', 15_000);
      expect(second[0]!.payload).toBe('p');
      await until(async () => (await b.getJob('k', 'x'))?.state === 'completed', 'completion');
      release();
      await new Promise((r) => setTimeout(r, 50));
      expect((await b.getJob('k', 'x'))!.state).toBe('completed');
      expect(second).toHaveLength(1);
    });
  });
}
