import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedJobQueue } from '../../src/gateways/queue/embedded.js';
import type { Job } from '../../src/gateways/queue/port.js';
import { jobQueueContract } from './queue.contract.js';
import { until } from '../support/until.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-queue-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

jobQueueContract('embedded (SQLite)', {
  open: async (name) => new EmbeddedJobQueue(path.join(dir, `${name}.db`), { pollMs: 20, leaseMs: 300 }),
});

it('polls on the index only: finished jobs (kept a week) are never read, nothing is sorted', async () => {
  const q = new EmbeddedJobQueue(path.join(dir, 'plans.db'));
  for (const plan of q.pollPlans()) {
    expect(plan).toMatch(/USING (COVERING )?INDEX jobs_due \(queue=\? AND state=\?/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN/);
  }
  await q.close();
});

it("a new worker takes over a dead worker's running jobs at once, not after their lease", async () => {
  const file = path.join(dir, 'takeover.db');
  // A lease far longer than the deadline below: only the takeover can run the job again in time.
  const a = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
  let startedOnA!: () => void;
  const runningOnA = new Promise<void>((r) => (startedOnA = r));
  a.process<{ n: number }>('q', () => {
    startedOnA();
    return new Promise<void>(() => {}); // still running when its process dies
  });
  await a.enqueue('q', { id: 'job-1', payload: { n: 1 } });
  await runningOnA;
  a.abandon();

  const b = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
  try {
    const ran: number[] = [];
    b.process<{ n: number }>('q', async (job) => {
      ran.push(job.payload.n);
    });
    expect((await b.getJob('q', 'job-1'))?.state).toBe('active');
    await b.takeOverRunning();
    const deadline = Date.now() + 10_000;
    while ((await b.getJob('q', 'job-1'))?.state !== 'completed') {
      if (Date.now() > deadline) throw new Error('the orphaned job did not run again');
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(ran).toEqual([1]);
  } finally {
    await b.close();
  }
});

describe('a due job enqueued where its queue runs, with a slot free, is stored claimed and run without a poll', () => {
  /** A first job run to completion: the polls since found no due job waiting, so new ones are claimed as stored. */
  const warmUp = async (q: EmbeddedJobQueue) => {
    await q.enqueue('q', { id: 'warm-up', payload: null });
    await until(async () => (await q.getJob('q', 'warm-up'))?.state === 'completed', 'the warm-up job');
    return q.stats.claims;
  };
  const noWarmUp = (handler: (job: Job) => Promise<void>) => (job: Job) => (job.id === 'warm-up' ? Promise.resolve() : handler(job));

  it('runs it once, as attempt 1, with no claim transaction, holding the lease a claim holds', async () => {
    const q = new EmbeddedJobQueue(path.join(dir, 'at-once.db'), { pollMs: 20, leaseMs: 60_000 });
    try {
      let release!: () => void;
      const runs: Job[] = [];
      q.process('q', noWarmUp((job) => {
        runs.push(job);
        return new Promise<void>((r) => (release = r));
      }), { concurrency: 8 });
      const claims = await warmUp(q);
      await q.enqueue('q', { id: 'j1', payload: { n: 1 }, backoffMs: [10] });
      await until(() => runs.length === 1, 'the job');
      expect(runs[0]).toMatchObject({ id: 'j1', payload: { n: 1 }, attempt: 1, maxAttempts: 2 });
      expect(await q.getJob('q', 'j1')).toMatchObject({ state: 'active', attempts: 1 });
      expect(q.stats.claims).toBe(claims);
      release();
      await until(async () => (await q.getJob('q', 'j1'))?.state === 'completed', 'completion');
      // Enqueued again once completed: a no-op, as ever.
      await q.enqueue('q', { id: 'j1', payload: { n: 2 } });
      await q.enqueue('q', { id: 'j2', payload: { n: 3 } });
      await until(() => runs.length === 2, 'the second job');
      release();
      expect(runs.map((r) => r.id)).toEqual(['j1', 'j2']);
      expect(q.stats.claims).toBe(claims);
    } finally {
      await q.close();
    }
  });

  it('leaves a quarter of the slots to the polls, and new jobs queue behind one a poll found waiting', async () => {
    const file = path.join(dir, 'reserve.db');
    const q = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
    const other = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
    try {
      const gates: (() => void)[] = [];
      const started: string[] = [];
      q.process('q', noWarmUp((job) => {
        started.push(job.id);
        return new Promise<void>((r) => gates.push(r));
      }), { concurrency: 4 });
      const claims = await warmUp(q);
      // Three new jobs take the three slots new jobs may take, claimed as they are stored.
      for (const id of ['n1', 'n2', 'n3']) await q.enqueue('q', { id, payload: null });
      await until(() => started.length === 3, 'three jobs running');
      expect(q.stats.claims).toBe(claims);
      // The fourth slot is the polls': a fourth new job is stored waiting and claimed by a poll.
      await q.enqueue('q', { id: 'n4', payload: null });
      await until(() => started.length === 4, 'the fourth slot used');
      expect(started[3]).toBe('n4');
      expect(q.stats.claims).toBe(claims + 1);
      // A job another process stored runs once a slot frees, before new jobs take it: the poll had queued behind it.
      await other.enqueue('q', { id: 'elsewhere', payload: null });
      gates.shift()!();
      await q.enqueue('q', { id: 'n5', payload: null });
      await until(() => started.length === 5, 'a freed slot used');
      expect(started[4]).toBe('elsewhere');
      for (const g of gates.splice(0)) g();
    } finally {
      await other.close();
      await q.close();
    }
  });

  it('a job stored claimed whose process dies before it finishes runs again in the process that takes over', async () => {
    const file = path.join(dir, 'claimed-crash.db');
    const a = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
    let startedOnA!: () => void;
    const runningOnA = new Promise<void>((r) => (startedOnA = r));
    a.process('q', noWarmUp(() => {
      startedOnA();
      return new Promise<void>(() => {});
    }), { concurrency: 4 });
    const claims = await warmUp(a);
    await a.enqueue('q', { id: 'j', payload: 7 });
    await runningOnA;
    expect(a.stats.claims).toBe(claims); // it was stored claimed
    a.abandon();
    const b = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
    try {
      const ran: Job[] = [];
      b.process('q', async (job) => void ran.push(job));
      expect(await b.getJob('q', 'j')).toMatchObject({ state: 'active', attempts: 1 });
      await b.takeOverRunning();
      await until(async () => (await b.getJob('q', 'j'))?.state === 'completed', 'the job run again');
      expect(ran).toMatchObject([{ id: 'j', payload: 7, attempt: 2 }]);
    } finally {
      await b.close();
    }
  });
});
