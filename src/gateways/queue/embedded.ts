/**
 * Embedded job queue: one SQLite file (`DATA_DIR/jobs.db`, WAL, synced before acknowledging), polled by the
 * process that registers handlers. A running job holds a lease that the process renews while the
 * handler runs; a job whose lease lapsed (its process died) is taken again by whoever polls next,
 * so several processes may share the file and a crash loses no job.
 */
import type Database from 'better-sqlite3';
import { WalSync, openSqlite } from '../sqlite.js';
import { randomUUID } from 'node:crypto';
import {
  COMPLETED_RETENTION_MS,
  PermanentJobError,
  checkEnqueue,
  checkQueueName,
  errorMessage,
  firstRunAt,
  type EnqueueOptions,
  type JobHandler,
  type JobInfo,
  type JobQueue,
  type ProcessOptions,
} from './port.js';

interface Row {
  queue: string;
  id: string;
  payload: string;
  state: 'waiting' | 'active' | 'completed' | 'failed';
  run_at: number;
  attempts: number;
  backoff: string;
  last_error: string | null;
  lock_token: string | null;
  locked_until: number | null;
}

export interface EmbeddedQueueOptions {
  /** How often an idle worker looks for due jobs written by other processes. Default 250 ms. */
  pollMs?: number;
  /** How long a running job's lease lasts without renewal; a crashed run is retried after it. Default 30 s. */
  leaseMs?: number;
  /** The clock due times are read on (the platform's, so tests can move it). Default Date.now. */
  now?: () => number;
}

class QueueWorker {
  active = new Set<Promise<void>>();
  timer: NodeJS.Timeout | null = null;
  scheduled = false;
  /**
   * A due job may be waiting in the file for a slot (one was stored waiting, or the last poll filled
   * every slot it had): until a poll finds fewer due jobs than slots, new jobs queue behind it.
   */
  backlog = true;
  /**
   * When a poll next looks for lapsed leases. That query reads every running job of the queue (the
   * lease's end is not in the index), so it runs once per poll interval, not on every poll a job's end
   * or enqueue makes: a lease that lapsed (its process died) waits at most that much longer.
   */
  lapseCheckAt = 0;
  constructor(
    readonly name: string,
    readonly handler: JobHandler<unknown>,
    readonly concurrency: number,
  ) {}
}

export class EmbeddedJobQueue implements JobQueue {
  private readonly db: Database.Database;
  private readonly wal: WalSync;
  private readonly token = randomUUID();
  private readonly workers = new Map<string, QueueWorker>();
  private readonly running = new Map<string, Set<string>>();
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly now: () => number;
  private heartbeat: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly stmts;
  private readonly counts = { commits: 0, writes: 0, claims: 0 };

  /**
   * What jobs.db did: synced commits (enqueues and outcomes) and the rows they wrote, claim
   * transactions (unsynced), WAL syncs. The bench reports them per delivery.
   */
  get stats(): { commits: number; writes: number; claims: number; syncs: number } {
    return { ...this.counts, syncs: this.wal.syncs };
  }

  constructor(file: string, options: EmbeddedQueueOptions = {}) {
    this.pollMs = options.pollMs ?? 250;
    this.now = options.now ?? Date.now;
    this.leaseMs = options.leaseMs ?? 30_000;
    // NORMAL, and the WAL synced off the event loop before an enqueue or a job's outcome is
    // acknowledged (WalSync): that survives power loss / kill -9 like FULL, and writes made together
    // share one sync. A claim or a lease renewal need no sync: losing one is what a crash mid-run is.
    this.db = openSqlite(file, 'NORMAL');
    this.wal = new WalSync(file);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS jobs (
        queue TEXT NOT NULL,
        id TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL,
        run_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        backoff TEXT NOT NULL,
        last_error TEXT,
        lock_token TEXT,
        locked_until INTEGER,
        created_at INTEGER NOT NULL,
        finished_at INTEGER,
        PRIMARY KEY (queue, id)
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS jobs_due ON jobs (queue, state, run_at);
    `);
    this.stmts = {
      insert: this.db.prepare(
        `INSERT INTO jobs (queue, id, payload, state, run_at, backoff, created_at) VALUES (?, ?, ?, 'waiting', ?, ?, ?) ON CONFLICT (queue, id) DO NOTHING`,
      ),
      // Stored already claimed by this process (see enqueue): as the claim below leaves it.
      insertClaimed: this.db.prepare(
        `INSERT INTO jobs (queue, id, payload, state, run_at, attempts, backoff, lock_token, locked_until, created_at) VALUES (?, ?, ?, 'active', ?, 1, ?, ?, ?, ?) ON CONFLICT (queue, id) DO NOTHING`,
      ),
      get: this.db.prepare<[string, string], Row>('SELECT * FROM jobs WHERE queue = ? AND id = ?'),
      // Each on the (queue, state, run_at) index: finished jobs stay in the table for a week, and a
      // query that read them (an OR across states did: the whole queue, then a sort) cost every poll
      // more the more deliveries were made.
      due: this.db.prepare<[string, number, number], Row>(`SELECT * FROM jobs INDEXED BY jobs_due WHERE queue = ? AND state = 'waiting' AND run_at <= ? ORDER BY run_at LIMIT ?`),
      lapsed: this.db.prepare<[string, number, number], Row>(`SELECT * FROM jobs INDEXED BY jobs_due WHERE queue = ? AND state = 'active' AND locked_until < ? LIMIT ?`),
      claim: this.db.prepare(
        `UPDATE jobs SET state = 'active', attempts = attempts + 1, lock_token = ?, locked_until = ? WHERE queue = ? AND id = ?`,
      ),
      nextRun: this.db.prepare<[string], { t: number | null }>(`SELECT MIN(run_at) AS t FROM jobs WHERE queue = ? AND state = 'waiting'`),
      nextLapse: this.db.prepare<[string], { t: number | null }>(`SELECT MIN(locked_until) AS t FROM jobs INDEXED BY jobs_due WHERE queue = ? AND state = 'active'`),
      complete: this.db.prepare(
        `UPDATE jobs SET state = 'completed', finished_at = ?, lock_token = NULL, locked_until = NULL WHERE queue = ? AND id = ? AND lock_token = ?`,
      ),
      retry: this.db.prepare(
        `UPDATE jobs SET state = 'waiting', run_at = ?, last_error = ?, lock_token = NULL, locked_until = NULL WHERE queue = ? AND id = ? AND lock_token = ?`,
      ),
      fail: this.db.prepare(
        `UPDATE jobs SET state = 'failed', finished_at = ?, last_error = ?, lock_token = NULL, locked_until = NULL WHERE queue = ? AND id = ? AND lock_token = ?`,
      ),
      renew: this.db.prepare(`UPDATE jobs SET locked_until = ? WHERE queue = ? AND id = ? AND lock_token = ?`),
      waiting: this.db.prepare<[string], { n: number }>(`SELECT COUNT(*) AS n FROM jobs WHERE queue = ? AND state = 'waiting'`),
      prune: this.db.prepare(`DELETE FROM jobs WHERE state = 'completed' AND finished_at < ?`),
    };
    this.stmts.prune.run(this.now() - COMPLETED_RETENTION_MS);
  }

  async enqueue<P>(queue: string, job: EnqueueOptions<P>): Promise<void> {
    checkEnqueue(queue, job);
    if (this.closed) throw new Error('job queue is closed');
    const now = this.now();
    const runAt = firstRunAt(job, now);
    const worker = this.workers.get(queue);
    if (worker && runAt <= now && this.mayClaimAtOnce(worker)) return this.enqueueClaimed(worker, queue, job, now);
    // Enqueues of one turn share a transaction and a sync; a failed write rejects every one of them.
    const ok = await this.writeSoon(() => this.stmts.insert.run(queue, job.id, JSON.stringify(job.payload ?? null), runAt, JSON.stringify(job.backoffMs ?? []), now));
    if (ok !== true) throw ok.err;
    if (worker && runAt <= now) worker.backlog = true;
    this.kick(worker, job.runAt !== undefined || job.delayMs !== undefined ? Math.max(0, runAt - now) : 0);
  }

  /**
   * A due job for a queue this process runs, with a slot free and no due job waiting for one: stored
   * already claimed (state, attempt and lease as a poll's claim leaves them) and run once the write is
   * synced, without a poll's query and claim transaction. A quarter of the slots stay for the polls
   * (retries, jobs other processes stored, lapsed leases), so a stream of new jobs cannot starve them.
   */
  private mayClaimAtOnce(worker: QueueWorker): boolean {
    return !worker.backlog && worker.active.size < worker.concurrency - Math.max(1, Math.floor(worker.concurrency / 4));
  }

  private async enqueueClaimed<P>(worker: QueueWorker, queue: string, job: EnqueueOptions<P>, now: number): Promise<void> {
    const row: Row = {
      queue,
      id: job.id,
      payload: JSON.stringify(job.payload ?? null),
      state: 'active',
      run_at: now,
      attempts: 0,
      backoff: JSON.stringify(job.backoffMs ?? []),
      last_error: null,
      lock_token: this.token,
      locked_until: now + this.leaseMs,
    };
    let claimed = false;
    const written = this.writeSoon(() => {
      claimed = this.stmts.insertClaimed.run(queue, row.id, row.payload, now, row.backoff, this.token, row.locked_until, now).changes > 0;
    });
    // The slot is taken now; the handler starts once the job is durable, and only if this insert
    // stored it (an id that exists is left as it is: dedupe).
    this.start(worker, row, written.then((ok) => ok === true && claimed));
    const ok = await written;
    if (ok !== true) throw ok.err;
    if (!claimed) this.kick(worker, 0);
  }

  process<P>(queue: string, handler: JobHandler<P>, options: ProcessOptions = {}): void {
    checkQueueName(queue);
    if (this.workers.has(queue)) throw new Error(`queue ${queue} already has a handler in this process`);
    const worker = new QueueWorker(queue, handler as JobHandler<unknown>, Math.max(1, options.concurrency ?? 1));
    this.workers.set(queue, worker);
    this.running.set(queue, new Set());
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.renewLeases(), Math.max(10, Math.floor(this.leaseMs / 3)));
      this.heartbeat.unref();
    }
    this.kick(worker, 0);
  }

  async getJob<P = unknown>(queue: string, id: string): Promise<JobInfo<P> | null> {
    const row = this.stmts.get.get(queue, id);
    if (!row) return null;
    const state = row.state === 'waiting' && row.run_at > this.now() ? 'delayed' : row.state;
    return { queue, id, payload: JSON.parse(row.payload) as P, state, attempts: row.attempts, lastError: row.last_error };
  }

  async waitingCounts(queues: string[]): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const q of queues) out[q] = this.stmts.waiting.get(q)?.n ?? 0;
    return out;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopTimers();
    await Promise.allSettled([...this.workers.values()].flatMap((w) => [...w.active]));
    await this.wal.close();
    if (this.db.open) this.db.close();
  }

  /**
   * Test aid: how SQLite runs the queries every poll makes (EXPLAIN QUERY PLAN details), so a test
   * can hold them to the index and away from the finished jobs kept for a week.
   */
  pollPlans(): string[] {
    const plan = (st: Database.Statement, ...args: unknown[]) => (this.db.prepare(`EXPLAIN QUERY PLAN ${st.source}`).all(...args) as { detail: string }[]).map((r) => r.detail).join('; ');
    return [plan(this.stmts.due, 'q', 0, 1), plan(this.stmts.lapsed, 'q', 0, 1), plan(this.stmts.nextRun, 'q'), plan(this.stmts.nextLapse, 'q')];
  }

  async takeOverRunning(): Promise<void> {
    if (this.closed) return;
    // Lapsed at once: taken again as any lapsed lease is (a lost update only waits for the lapse).
    this.db.prepare(`UPDATE jobs SET locked_until = 0 WHERE state = 'active' AND lock_token IS NOT ?`).run(this.token);
    for (const worker of this.workers.values()) {
      worker.lapseCheckAt = 0;
      this.kick(worker, 0);
    }
  }

  /**
   * Test aid: behaves like a crash. Stops at once without finishing or releasing running jobs; their
   * handlers' outcomes are ignored and their leases lapse, so another instance takes them again.
   */
  abandon(): void {
    this.closed = true;
    this.stopTimers();
    void this.wal.close();
    if (this.db.open) this.db.close();
  }

  private stopTimers() {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    for (const w of this.workers.values()) if (w.timer) clearTimeout(w.timer);
  }

  /** Runs the worker's poll now (0) or after `delay`, whichever of the pending wake-ups is sooner. */
  private kick(worker: QueueWorker | undefined, delay: number) {
    if (!worker || this.closed) return;
    if (delay <= 0) {
      if (worker.scheduled) return;
      worker.scheduled = true;
      if (worker.timer) clearTimeout(worker.timer);
      worker.timer = null;
      setImmediate(() => {
        worker.scheduled = false;
        this.poll(worker);
      });
      return;
    }
    if (worker.scheduled) return;
    // A later wake-up replaces an earlier one only when it is sooner.
    const at = this.now() + delay;
    const w = worker as QueueWorker & { timerAt?: number };
    if (w.timer && w.timerAt !== undefined && w.timerAt <= at) return;
    if (w.timer) clearTimeout(w.timer);
    w.timerAt = at;
    w.timer = setTimeout(() => {
      w.timer = null;
      w.timerAt = undefined;
      this.poll(worker);
    }, delay);
  }

  private poll(worker: QueueWorker) {
    if (this.closed) return;
    try {
      const free = worker.concurrency - worker.active.size;
      if (free > 0) {
        const now = this.now();
        // A claim is not synced: a lost claim leaves the job waiting, which is what a crash mid-run
        // amounts to anyway.
        const lapseCheck = now >= worker.lapseCheckAt;
        if (lapseCheck) worker.lapseCheckAt = now + this.pollMs;
        const claimed = this.db.transaction(() => {
          const rows = lapseCheck ? this.stmts.lapsed.all(worker.name, now, free) : [];
          if (rows.length < free) rows.push(...this.stmts.due.all(worker.name, now, free - rows.length));
          for (const r of rows) this.stmts.claim.run(this.token, now + this.leaseMs, r.queue, r.id);
          return rows;
        })();
        if (claimed.length > 0) this.counts.claims++;
        // Fewer due jobs than slots: none waits any more (until one is stored waiting).
        worker.backlog = claimed.length >= free;
        for (const row of claimed) this.start(worker, row);
      }
      if (worker.active.size < worker.concurrency) {
        const lapse = this.stmts.nextLapse.get(worker.name)?.t ?? null;
        const times = [this.stmts.nextRun.get(worker.name)?.t ?? null, lapse === null ? null : Math.max(lapse, worker.lapseCheckAt)].filter((t): t is number => t !== null);
        const next = times.length > 0 ? Math.min(...times) : null;
        const until = next === null ? this.pollMs : Math.min(this.pollMs, Math.max(1, next - this.now()));
        this.kick(worker, until);
      }
    } catch (err) {
      if (this.closed) return;
      // A busy or briefly unavailable file: try again on the next poll.
      this.kick(worker, this.pollMs);
      void err;
    }
  }

  /** Runs a claimed job (`row` as it was before its claim); `go`, when given, says whether to run it after all. */
  private start(worker: QueueWorker, row: Row, go?: Promise<boolean>) {
    const attempt = row.attempts + 1;
    const backoff = JSON.parse(row.backoff) as number[];
    const ids = this.running.get(worker.name)!;
    // Renewed from now (a renewal finds no row until the write stores it). A job not stored after all
    // (its id exists) gives back only a renewal it added: a run of that id here keeps its own.
    const renewing = !ids.has(row.id);
    ids.add(row.id);
    const run = (async () => {
      if (go && !(await go)) {
        if (renewing) ids.delete(row.id);
        return;
      }
      let outcome: { ok: true } | { ok: false; err: unknown };
      try {
        await worker.handler({ queue: row.queue, id: row.id, payload: JSON.parse(row.payload), attempt, maxAttempts: backoff.length + 1 });
        outcome = { ok: true };
      } catch (err) {
        outcome = { ok: false, err };
      }
      await this.writeSoon(() => {
        const now = this.now();
        if (outcome.ok) {
          this.stmts.complete.run(now, row.queue, row.id, this.token);
        } else {
          const message = errorMessage(outcome.err);
          const permanent = outcome.err instanceof PermanentJobError;
          if (!permanent && attempt <= backoff.length) this.stmts.retry.run(now + backoff[attempt - 1]!, message, row.queue, row.id, this.token);
          else this.stmts.fail.run(now, message, row.queue, row.id, this.token);
        }
      });
      ids.delete(row.id);
    })();
    worker.active.add(run);
    void run.finally(() => {
      worker.active.delete(run);
      this.kick(worker, 0);
    });
  }

  private pendingWrites: { write: () => void; done: (outcome: true | { err: unknown }) => void }[] = [];

  /**
   * Group commit: enqueues and outcomes of jobs finishing in the same turn of the event loop are
   * written in one transaction, synced (off the event loop) before they resolve true. Resolves with
   * the error when the write or the sync failed or the queue was abandoned: an outcome not recorded
   * leaves the lease to lapse and the job to run again; an enqueue not recorded is refused.
   */
  private writeSoon(write: () => void): Promise<true | { err: unknown }> {
    return new Promise((done) => {
      this.pendingWrites.push({ write, done });
      if (this.pendingWrites.length > 1) return;
      setImmediate(() => {
        const batch = this.pendingWrites;
        this.pendingWrites = [];
        const finish = (outcome: true | { err: unknown }) => batch.forEach((b) => b.done(outcome));
        try {
          if (!this.db.open) return finish({ err: new Error('job queue is closed') });
          this.db.transaction(() => batch.forEach((b) => b.write()))();
          this.counts.commits++;
          this.counts.writes += batch.length;
        } catch (err) {
          return finish({ err });
        }
        this.wal.sync().then(
          () => finish(true),
          (err: unknown) => finish({ err }),
        );
      });
    });
  }

  private renewLeases() {
    if (this.closed || !this.db.open) return;
    const until = this.now() + this.leaseMs;
    for (const [queue, ids] of this.running) for (const id of ids) this.stmts.renew.run(until, queue, id, this.token);
  }
}
