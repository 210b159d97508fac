import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedJobQueue } from '../../src/gateways/queue/embedded.js';
import type { Job } from '../../src/gateways/queue/port.js';
import { jobQueueContract } from './queue.contract.js';
import { until } from '../support/until.js';
import { buildOnce, type Build } from '../support/build.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-queue-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Options = ConstructorParameters<typeof EmbeddedJobQueue>[1];
/** Opens an EmbeddedJobQueue of the sources (on this thread) or of the built code (its file on a thread of its own). */
type Open = (file: string, options: Options) => EmbeddedJobQueue;

jobQueueContract('embedded (SQLite)', {
  open: async (name) => new EmbeddedJobQueue(path.join(dir, `${name}.db`), { pollMs: 20, leaseMs: 300 }),
});

describe('on its thread (the built code: a worker thread cannot load the TypeScript sources)', () => {
  let build: Build | undefined;
  let Built: typeof EmbeddedJobQueue;
  beforeAll(async () => {
    build = buildOnce('ct-queue-thread-');
    Built = ((await import(path.join(build.out, 'src/gateways/queue/embedded.js'))) as { EmbeddedJobQueue: typeof EmbeddedJobQueue }).EmbeddedJobQueue;
  }, 120_000);
  afterAll(() => build?.remove());
  const open: Open = (file, options) => new Built(file, { ...options, thread: true });

  jobQueueContract('embedded (SQLite) on its thread', {
    open: async (name) => open(path.join(dir, `thread-${name}.db`), { pollMs: 20, leaseMs: 300 }),
  });
  fileTests('thread-', open);

  it('a thread lost (it failed or exited) is started again: requests in flight fail, later ones are answered', async () => {
    const q = open(path.join(dir, 'thread-lost.db'), {});
    try {
      await q.enqueue('q', { id: 'a', payload: 1 });
      const store = q['store'] as unknown as { thread: { worker: { terminate(): Promise<number> } } };
      const inFlight = q.getJob('q', 'a');
      await store.thread.worker.terminate();
      await expect(inFlight).rejects.toThrow(/job queue thread exited/);
      await q.enqueue('q', { id: 'b', payload: 2 });
      expect(await q.getJob('q', 'a')).toMatchObject({ state: 'waiting', payload: 1 });
      expect(await q.getJob('q', 'b')).toMatchObject({ state: 'waiting', payload: 2 });
    } finally {
      await q.close();
    }
  });

  it("an error from its thread keeps its code (SQLITE_FULL and the like answer 503)", async () => {
    const q = open(path.join(dir, 'thread-error-code.db'), {});
    try {
      const store = q['store'] as unknown as { write(ops: unknown[]): Promise<number[]> };
      // A payload that is not there: the NOT NULL constraint refuses the insert.
      await expect(store.write([['insert', 'q', 'x', null, 0, '[]', 0]])).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_NOTNULL', message: expect.stringMatching(/NOT NULL/) });
    } finally {
      await q.close();
    }
  });

  it('fails in the constructor, as on the calling thread, when the file is not a database', () => {
    const file = path.join(dir, 'thread-garbage.db');
    writeFileSync(file, 'not a database, but long enough to have a header: '.repeat(20));
    expect(() => open(file, {})).toThrow(/not a database/);
  });

  it('is on a thread of its own there, and an idle one keeps no process alive', async () => {
    const q = open(path.join(dir, 'thread-idle.db'), {});
    expect(q['store'].constructor.name).toBe('ThreadedJobsStore');
    await q.close();
    // A process that stored a job and left its queue open ends by itself, as with the file on its own thread.
    const script = `
      const { EmbeddedJobQueue } = await import(${JSON.stringify(path.join(build!.out, 'src/gateways/queue/embedded.js'))});
      const q = new EmbeddedJobQueue(process.argv[2], { thread: true });
      await q.enqueue('q', { id: 'a', payload: 1 });
      process.stdout.write(JSON.stringify(await q.getJob('q', 'a')));`;
    const file = path.join(build!.work, 'queue-idle.mjs');
    writeFileSync(file, script);
    const { stdout } = await promisify(execFile)(process.execPath, [file, path.join(dir, 'thread-idle-process.db')], { cwd: build!.work, encoding: 'utf8', timeout: 20_000 });
    expect(JSON.parse(stdout)).toMatchObject({ state: 'waiting', payload: 1, attempts: 0 });
  }, 30_000);
});

it('polls on the index only: finished jobs (kept a week) are never read, nothing is sorted', async () => {
  const q = new EmbeddedJobQueue(path.join(dir, 'plans.db'));
  for (const plan of await q.pollPlans()) {
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

fileTests('', (file, options) => new EmbeddedJobQueue(file, options));

function fileTests(prefix: string, open: Open) {
  describe('jobs.db files', () => {
    it('one written before the table had a rowid (keyed by queue and id) is taken over whole: waiting jobs run, finished ones dedupe, lapsed ones run again', async () => {
      const file = path.join(dir, `${prefix}old-schema.db`);
      const old = new Database(file);
      old.pragma('journal_mode = WAL');
      // The schema as it was, and one job in each state a restart can find.
      old.exec(`
        CREATE TABLE jobs (queue TEXT NOT NULL, id TEXT NOT NULL, payload TEXT NOT NULL, state TEXT NOT NULL, run_at INTEGER NOT NULL,
          attempts INTEGER NOT NULL DEFAULT 0, backoff TEXT NOT NULL, last_error TEXT, lock_token TEXT, locked_until INTEGER,
          created_at INTEGER NOT NULL, finished_at INTEGER, PRIMARY KEY (queue, id)) WITHOUT ROWID;
        CREATE INDEX jobs_due ON jobs (queue, state, run_at);
      `);
      const now = Date.now();
      const add = old.prepare(`INSERT INTO jobs (queue, id, payload, state, run_at, attempts, backoff, last_error, lock_token, locked_until, created_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
      add.run('q', 'waiting', '{"n":1}', 'waiting', now - 5, 0, '[]', null, null, null, now - 5, null);
      add.run('q', 'done', '{"n":2}', 'completed', now - 9, 1, '[]', null, null, null, now - 9, now - 8);
      add.run('q', 'failed', '{"n":3}', 'failed', now - 9, 2, '[10]', 'boom', null, null, now - 9, now - 8);
      add.run('q', 'orphan', '{"n":4}', 'active', now - 7, 1, '[10]', null, 'dead-process', now - 1, now - 7, null);
      old.close();

      const q = open(file, { pollMs: 20, leaseMs: 300 });
      try {
        // Asked first: the file is open (on a thread it opens in the background).
        expect(await q.getJob('q', 'failed')).toMatchObject({ state: 'failed', attempts: 2, lastError: 'boom', payload: { n: 3 } });
        const schema = new Database(file, { readonly: true });
        expect(schema.prepare(`SELECT sql FROM sqlite_master WHERE name = 'jobs'`).get()).not.toMatchObject({ sql: expect.stringMatching(/WITHOUT ROWID/i) });
        schema.close();
        const ran: Job[] = [];
        q.process('q', async (job) => void ran.push(job), { concurrency: 4 });
        await q.enqueue('q', { id: 'done', payload: { n: 5 } });
        await q.enqueue('q', { id: 'new', payload: { n: 6 } });
        await until(() => ran.length === 3, 'the waiting, lapsed and new jobs');
        expect(ran.map((j) => [j.id, j.attempt]).sort()).toEqual([['new', 1], ['orphan', 2], ['waiting', 1]]);
        for (const id of ['waiting', 'orphan', 'new', 'done']) await until(async () => (await q.getJob('q', id))?.state === 'completed', `${id} completed`);
        expect(await q.getJob('q', 'done')).toMatchObject({ payload: { n: 2 } });
      } finally {
        await q.close();
      }
    });

    it('a job running longer than its lease keeps it (renewed) and no other process takes it, whether polled or stored claimed', async () => {
      const file = path.join(dir, `${prefix}renewal.db`);
      const leaseMs = 150;
      const a = open(file, { pollMs: 20, leaseMs });
      const b = open(file, { pollMs: 20, leaseMs });
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      try {
        const started: Record<string, number> = {};
        // Stored waiting by b (a poll of a claims it), then stored claimed by a itself.
        await b.enqueue('q', { id: 'polled', payload: null });
        a.process('q', async (job) => {
          started[job.id] = Date.now();
          await released;
        }, { concurrency: 8 });
        await until(() => started.polled !== undefined, 'the polled job on a');
        await until(async () => (await a.getJob('q', 'polled'))?.state === 'active' && a.stats.claims > 0, 'the claim');
        await until(() => a['workers'].get('q')?.backlog === false, 'a poll finding no job waiting');
        await a.enqueue('q', { id: 'claimed', payload: null });
        await until(() => started.claimed !== undefined, 'the job stored claimed on a');
        const onB: string[] = [];
        b.process('q', async (job) => void onB.push(job.id), { concurrency: 8 });
        // Three leases and more pass while both run on a; b polls all that time.
        await until(() => Date.now() - started.claimed! > 4 * leaseMs, 'four leases', 5_000);
        expect(onB).toEqual([]);
        release();
        for (const id of ['polled', 'claimed']) await until(async () => (await a.getJob('q', id))?.state === 'completed', `${id} completed`);
        expect(onB).toEqual([]);
      } finally {
        release();
        await b.close();
        await a.close();
      }
    });
  });
}

