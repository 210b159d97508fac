/**
 * Embedded job queue: one SQLite file (`DATA_DIR/jobs.db`, WAL, synced before acknowledging), polled by the
 * process that registers handlers. A running job holds a lease that the process renews while the
 * handler runs; a job whose lease lapsed (its process died) is taken again by whoever polls next,
 * so several processes may share the file and a crash loses no job. The file's reads and writes are
 * embedded-store.ts's (on a thread of their own in the built code); this class keeps the slots,
 * timers and handlers.
 */
import { randomUUID } from 'node:crypto';
import { openJobsStore, type JobsStore, type Row, type WriteOp } from './embedded-store.js';
import {
  COMPLETED_RETENTION_MS,
  checkEnqueue,
  checkQueueName,
  errorMessage,
  firstRunAt,
  isPermanentJobError,
  type EnqueueOptions,
  type JobHandler,
  type JobInfo,
  type JobQueue,
  type ProcessOptions,
} from './port.js';

export interface EmbeddedQueueOptions {
  /** How often an idle worker looks for due jobs written by other processes. Default 250 ms. */
  pollMs?: number;
  /** How long a running job's lease lasts without renewal; a crashed run is retried after it. Default 30 s. */
  leaseMs?: number;
  /** The clock due times are read on (the platform's, so tests can move it). Default Date.now. */
  now?: () => number;
  /**
   * The file on a thread of its own (embedded-store.ts; the built code alone can start it). Default:
   * on the calling thread (the platform chooses with EMBEDDED_THREADS).
   */
  thread?: boolean;
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
  /** A poll's claim is on its way: the slots it may fill are held for it, and a kick meanwhile polls again after it. */
  polling: Promise<void> | null = null;
  pollAgain = false;
  reserved = 0;
  constructor(
    readonly name: string,
    readonly handler: JobHandler<unknown>,
    readonly concurrency: number,
  ) {}
}

export class EmbeddedJobQueue implements JobQueue {
  private readonly store: JobsStore;
  private readonly token = randomUUID();
  private readonly workers = new Map<string, QueueWorker>();
  /** Jobs running here, by queue and id: their leases are renewed (by rowid) while they run. */
  private readonly running = new Map<string, Map<string, Row>>();
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly now: () => number;
  private heartbeat: NodeJS.Timeout | null = null;
  private closed = false;
  private abandoned = false;
  private readonly counts = { commits: 0, writes: 0, claims: 0 };

  /**
   * What jobs.db did: synced commits (enqueues and outcomes) and the rows they wrote, claim
   * transactions (unsynced), WAL syncs. The bench reports them per delivery.
   */
  get stats(): { commits: number; writes: number; claims: number; syncs: number } {
    return { ...this.counts, syncs: this.store.syncs };
  }

  constructor(file: string, options: EmbeddedQueueOptions = {}) {
    this.pollMs = options.pollMs ?? 250;
    this.now = options.now ?? Date.now;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.store = openJobsStore(file, this.now() - COMPLETED_RETENTION_MS, options.thread === undefined ? {} : { thread: options.thread });
  }

  async enqueue<P>(queue: string, job: EnqueueOptions<P>): Promise<void> {
    checkEnqueue(queue, job);
    if (this.closed) throw new Error('job queue is closed');
    const now = this.now();
    const runAt = firstRunAt(job, now);
    const worker = this.workers.get(queue);
    if (worker && runAt <= now && this.mayClaimAtOnce(worker)) return this.enqueueClaimed(worker, queue, job, now);
    // Enqueues of one turn share a transaction and a sync; a failed write rejects every one of them.
    const stored = await this.writeSoon(['insert', queue, job.id, JSON.stringify(job.payload ?? null), runAt, JSON.stringify(job.backoffMs ?? []), now]);
    if (typeof stored !== 'number') throw stored.err;
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
    return !worker.backlog && busy(worker) < worker.concurrency - Math.max(1, Math.floor(worker.concurrency / 4));
  }

  private async enqueueClaimed<P>(worker: QueueWorker, queue: string, job: EnqueueOptions<P>, now: number): Promise<void> {
    const row: Row = {
      seq: 0, // known once stored
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
    const written = this.writeSoon(['insertClaimed', queue, row.id, row.payload, now, row.backoff, this.token, row.locked_until!]);
    // The slot is taken now; the handler starts once the job is durable, and only if this insert
    // stored it (an id that exists is left as it is: dedupe).
    const stored = written.then((seq) => {
      if (typeof seq !== 'number' || seq === 0) return false;
      row.seq = seq;
      return true;
    });
    this.start(worker, row, stored);
    const seq = await written;
    if (typeof seq !== 'number') throw seq.err;
    if (seq === 0) this.kick(worker, 0);
  }

  process<P>(queue: string, handler: JobHandler<P>, options: ProcessOptions = {}): void {
    checkQueueName(queue);
    if (this.workers.has(queue)) throw new Error(`queue ${queue} already has a handler in this process`);
    const worker = new QueueWorker(queue, handler as JobHandler<unknown>, Math.max(1, options.concurrency ?? 1));
    this.workers.set(queue, worker);
    this.running.set(queue, new Map());
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.renewLeases(), Math.max(10, Math.floor(this.leaseMs / 3)));
      this.heartbeat.unref();
    }
    this.kick(worker, 0);
  }

  async getJob<P = unknown>(queue: string, id: string): Promise<JobInfo<P> | null> {
    const row = await this.store.get(queue, id);
    if (!row) return null;
    const state = row.state === 'waiting' && row.run_at > this.now() ? 'delayed' : row.state;
    return { queue, id, payload: JSON.parse(row.payload) as P, state, attempts: row.attempts, lastError: row.last_error };
  }

  async waitingCounts(queues: string[]): Promise<Record<string, number>> {
    return this.store.waiting(queues);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopTimers();
    // A claim on its way first: the jobs it claimed run, and are waited for with the others.
    await Promise.allSettled([...this.workers.values()].map((w) => w.polling));
    await Promise.allSettled([...this.workers.values()].flatMap((w) => [...w.active]));
    await this.store.close();
  }

  /**
   * Test aid: how SQLite runs the queries every poll makes (EXPLAIN QUERY PLAN details), so a test
   * can hold them to the index and away from the finished jobs kept for a week.
   */
  pollPlans(): Promise<string[]> {
    return this.store.pollPlans();
  }

  async takeOverRunning(): Promise<void> {
    if (this.closed) return;
    // Lapsed at once: taken again as any lapsed lease is (a lost update only waits for the lapse).
    await this.store.takeOver(this.token);
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
    this.abandoned = true;
    this.stopTimers();
    this.store.abandon();
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
    if (worker.polling) {
      worker.pollAgain = true;
      return;
    }
    const free = worker.concurrency - busy(worker);
    if (free <= 0) return; // a job's end polls again
    const now = this.now();
    const lapseCheck = now >= worker.lapseCheckAt;
    if (lapseCheck) worker.lapseCheckAt = now + this.pollMs;
    worker.reserved = free;
    const done = () => {
      worker.polling = null;
      worker.reserved = 0;
    };
    // A claim is not synced: a lost claim leaves the job waiting, which is what a crash mid-run
    // amounts to anyway.
    worker.polling = this.store.claim({ queue: worker.name, now, free, lapseCheck, token: this.token, lockedUntil: now + this.leaseMs, lapseCheckAt: worker.lapseCheckAt }).then(
      ({ rows, next }) => {
        done();
        if (this.abandoned) return;
        if (rows.length > 0) this.counts.claims++;
        // Fewer due jobs than slots: none waits any more (until one is stored waiting).
        worker.backlog = rows.length >= free;
        // Run even when the queue closed meanwhile (close waits for them): claimed, they would
        // otherwise wait for their leases to lapse.
        for (const row of rows) this.start(worker, row);
        if (this.closed) return;
        if (worker.pollAgain) {
          worker.pollAgain = false;
          this.kick(worker, 0);
        } else if (rows.length < free) {
          const until = next === null ? this.pollMs : Math.min(this.pollMs, Math.max(1, next - this.now()));
          this.kick(worker, until);
        }
      },
      () => {
        done();
        // A busy or briefly unavailable file: try again on the next poll.
        if (!this.closed) this.kick(worker, this.pollMs);
      },
    );
  }

  /** Runs a claimed job (`row` as it was before its claim); `go`, when given, says whether to run it after all. */
  private start(worker: QueueWorker, row: Row, go?: Promise<boolean>) {
    const attempt = row.attempts + 1;
    const backoff = JSON.parse(row.backoff) as number[];
    const ids = this.running.get(worker.name)!;
    // Renewed from now (a renewal finds no row until the write stores it). A job not stored after all
    // (its id exists) gives back only a renewal it added: a run of that id here keeps its own.
    const renewing = !ids.has(row.id);
    if (renewing) ids.set(row.id, row);
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
      const now = this.now();
      let op: WriteOp;
      if (outcome.ok) {
        op = ['complete', row.seq, this.token, now];
      } else {
        const message = errorMessage(outcome.err);
        const permanent = isPermanentJobError(outcome.err);
        op = !permanent && attempt <= backoff.length ? ['retry', row.seq, this.token, now + backoff[attempt - 1]!, message] : ['fail', row.seq, this.token, now, message];
      }
      await this.writeSoon(op);
      ids.delete(row.id);
    })();
    worker.active.add(run);
    void run.finally(() => {
      worker.active.delete(run);
      this.kick(worker, 0);
    });
  }

  private pendingWrites: WriteOp[] = [];
  private pendingDone: ((result: number | { err: unknown }) => void)[] = [];

  /**
   * Group commit: enqueues and outcomes of jobs finishing in the same turn of the event loop are
   * written in one transaction, synced (off the event loop) before they resolve, each with its result
   * (an insert's rowid, 0 when its id existed; an outcome's changed rows). Resolves with the error
   * when the write or the sync failed or the queue was abandoned: an outcome not recorded leaves the
   * lease to lapse and the job to run again; an enqueue not recorded is refused.
   */
  private writeSoon(op: WriteOp): Promise<number | { err: unknown }> {
    return new Promise((done) => {
      this.pendingWrites.push(op);
      this.pendingDone.push(done);
      if (this.pendingWrites.length > 1) return;
      setImmediate(() => {
        const ops = this.pendingWrites;
        const dones = this.pendingDone;
        this.pendingWrites = [];
        this.pendingDone = [];
        const failed = (err: unknown) => dones.forEach((d) => d({ err }));
        if (this.abandoned) return failed(new Error('job queue is closed'));
        this.counts.commits++;
        this.counts.writes += ops.length;
        this.store.write(ops).then((results) => dones.forEach((d, i) => d(results[i]!)), failed);
      });
    });
  }

  private renewLeases() {
    if (this.closed) return;
    const seqs: number[] = [];
    for (const rows of this.running.values()) for (const row of rows.values()) if (row.seq > 0) seqs.push(row.seq);
    if (seqs.length === 0) return;
    // A busy file: the next heartbeat renews them (a lease lasts three heartbeats).
    this.store.renew(seqs, this.token, this.now() + this.leaseMs).catch(() => undefined);
  }
}

/** Slots taken: jobs running and those a claim on its way may fill. */
const busy = (worker: QueueWorker) => worker.active.size + worker.reserved;
