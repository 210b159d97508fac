/**
 * The embedded queue's file (`jobs.db`): what EmbeddedJobQueue (embedded.ts) asks of it, as requests
 * that resolve. With EMBEDDED_THREADS on (built code) the file is opened and written on a thread of its own: the inserts,
 * claims and outcomes of each delivery, their commits (the WAL pages they write) and WAL checkpoints
 * took a tenth of the platform thread's time per webhook delivery. The platform thread sends a request
 * (a turn's writes together) and gets the answer back; the thread runs `SqliteJobsStore` unchanged.
 *
 * Only the built code can start the thread (it loads this file's compiled JavaScript); run from the
 * TypeScript sources (tests), or without EMBEDDED_THREADS, the store runs on the calling thread.
 */
import type Database from 'better-sqlite3';
import { WalSync, openSqlite } from '../sqlite.js';
import { SqliteThread, canRunThreads, serveOnThread } from '../sqlite-thread.js';

/** A job's row. */
export interface Row {
  /** The rowid: outcomes and lease renewals find the row by it. */
  seq: number;
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

/** Writes of one synced transaction. */
export type WriteOp =
  | [op: 'insert', queue: string, id: string, payload: string, runAt: number, backoff: string, now: number]
  /** Stored already claimed by `token` (attempt 1, leased until `lockedUntil`). */
  | [op: 'insertClaimed', queue: string, id: string, payload: string, now: number, backoff: string, token: string, lockedUntil: number]
  | [op: 'complete', seq: number, token: string, finishedAt: number]
  | [op: 'retry', seq: number, token: string, runAt: number, error: string]
  | [op: 'fail', seq: number, token: string, finishedAt: number, error: string];

/** Per op: an insert's rowid (0 when the id existed: nothing stored), an outcome's changed rows. */
export type WriteResult = number[];

export interface ClaimRequest {
  queue: string;
  now: number;
  /** Jobs to claim at most. */
  free: number;
  /** Also take running jobs whose lease lapsed. */
  lapseCheck: boolean;
  token: string;
  lockedUntil: number;
  /** When the next lapse check may run (a lapse found by `next` waits for it). */
  lapseCheckAt: number;
}

export interface ClaimResult {
  /** Claimed, each as it was before its claim. */
  rows: Row[];
  /** Fewer rows than `free`: when a job is next due or a lease lapses (null: none); else null. */
  next: number | null;
}

export interface JobsStore {
  /** One transaction, synced before it resolves; a failure rejects it whole. */
  write(ops: WriteOp[]): Promise<WriteResult>;
  /** One transaction, not synced: a lost claim leaves the job to be claimed again. */
  claim(req: ClaimRequest): Promise<ClaimResult>;
  get(queue: string, id: string): Promise<Row | null>;
  waiting(queues: string[]): Promise<Record<string, number>>;
  /** Extends the leases of the rows `token` holds. */
  renew(seqs: number[], token: string, lockedUntil: number): Promise<void>;
  /** Leases held by anyone but `token` lapse now. */
  takeOver(token: string): Promise<void>;
  /** EXPLAIN QUERY PLAN of the queries every poll makes (test aid). */
  pollPlans(): Promise<string[]>;
  /** WAL syncs so far. */
  readonly syncs: number;
  /** Waits for the syncs asked for, closes the file. */
  close(): Promise<void>;
  /** Stops at once, as a crash would (test aid). */
  abandon(): void;
}

/** Every column but the key (`seq`, the rowid). */
const DATA_COLUMNS = `
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
  finished_at INTEGER`;
const JOB_COLUMNS = `seq INTEGER PRIMARY KEY, ${DATA_COLUMNS}`;
const DATA_COLUMN_NAMES = 'queue, id, payload, state, run_at, attempts, backoff, last_error, lock_token, locked_until, created_at, finished_at';

/**
 * A jobs.db written before the table had a rowid (it was keyed by (queue, id), WITHOUT ROWID) is
 * copied into the current table, in the order its jobs were stored, in one transaction: a crash
 * leaves the old table, and a process that opens the file at the same time waits and finds it done.
 */
function migrateToRowidTable(db: Database.Database): void {
  const keyedById = () => /WITHOUT\s+ROWID/i.test(db.prepare<[], { sql: string }>(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'`).get()?.sql ?? '');
  if (!keyedById()) return;
  db.transaction(() => {
    if (!keyedById()) return;
    db.exec(`
      CREATE TABLE jobs_rowid (${JOB_COLUMNS});
      INSERT INTO jobs_rowid (${DATA_COLUMN_NAMES}) SELECT ${DATA_COLUMN_NAMES} FROM jobs ORDER BY created_at;
      DROP TABLE jobs;
      ALTER TABLE jobs_rowid RENAME TO jobs;
    `);
  }).immediate();
}

/** The store on the calling thread. */
export class SqliteJobsStore implements JobsStore {
  private readonly db: Database.Database;
  private readonly wal: WalSync;
  private readonly stmts;

  get syncs(): number {
    return this.wal.syncs;
  }

  /** Completed jobs finished before `pruneBefore` are deleted (null: none). */
  constructor(file: string, pruneBefore: number | null) {
    // NORMAL, and the WAL synced off the event loop before an enqueue or a job's outcome is
    // acknowledged (WalSync): that survives power loss / kill -9 like FULL, and writes made together
    // share one sync. A claim or a lease renewal need no sync: losing one is what a crash mid-run is.
    this.db = openSqlite(file, 'NORMAL');
    this.wal = new WalSync(file);
    migrateToRowidTable(this.db);
    // Rows in the order they were stored (a rowid table), found by (queue, id) through a unique index:
    // the table was keyed by (queue, id) itself, and with random ids (delivery ids are UUIDs) each
    // insert, claim and outcome dirtied a page of its own anywhere in the table, so a commit wrote
    // about three pages a job to the WAL. Now the jobs stored together share pages, and so do their
    // claims and outcomes; only the id index takes one random page a job.
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS jobs (${JOB_COLUMNS});
      CREATE UNIQUE INDEX IF NOT EXISTS jobs_id ON jobs (queue, id);
      CREATE INDEX IF NOT EXISTS jobs_due ON jobs (queue, state, run_at);
    `);
    this.stmts = {
      insert: this.db.prepare(
        `INSERT INTO jobs (queue, id, payload, state, run_at, backoff, created_at) VALUES (?, ?, ?, 'waiting', ?, ?, ?) ON CONFLICT (queue, id) DO NOTHING`,
      ),
      // As the claim below leaves a job.
      insertClaimed: this.db.prepare(
        `INSERT INTO jobs (queue, id, payload, state, run_at, attempts, backoff, lock_token, locked_until, created_at) VALUES (?, ?, ?, 'active', ?, 1, ?, ?, ?, ?) ON CONFLICT (queue, id) DO NOTHING`,
      ),
      get: this.db.prepare<[string, string], Row>('SELECT * FROM jobs WHERE queue = ? AND id = ?'),
      // Each on the (queue, state, run_at) index: finished jobs stay in the table for a week, and a
      // query that read them (an OR across states did: the whole queue, then a sort) cost every poll
      // more the more deliveries were made.
      due: this.db.prepare<[string, number, number], Row>(`SELECT * FROM jobs INDEXED BY jobs_due WHERE queue = ? AND state = 'waiting' AND run_at <= ? ORDER BY run_at LIMIT ?`),
      lapsed: this.db.prepare<[string, number, number], Row>(`SELECT * FROM jobs INDEXED BY jobs_due WHERE queue = ? AND state = 'active' AND locked_until < ? LIMIT ?`),
      claim: this.db.prepare(`UPDATE jobs SET state = 'active', attempts = attempts + 1, lock_token = ?, locked_until = ? WHERE seq = ?`),
      nextRun: this.db.prepare<[string], { t: number | null }>(`SELECT MIN(run_at) AS t FROM jobs WHERE queue = ? AND state = 'waiting'`),
      nextLapse: this.db.prepare<[string], { t: number | null }>(`SELECT MIN(locked_until) AS t FROM jobs INDEXED BY jobs_due WHERE queue = ? AND state = 'active'`),
      complete: this.db.prepare(`UPDATE jobs SET state = 'completed', finished_at = ?, lock_token = NULL, locked_until = NULL WHERE seq = ? AND lock_token = ?`),
      retry: this.db.prepare(`UPDATE jobs SET state = 'waiting', run_at = ?, last_error = ?, lock_token = NULL, locked_until = NULL WHERE seq = ? AND lock_token = ?`),
      fail: this.db.prepare(`UPDATE jobs SET state = 'failed', finished_at = ?, last_error = ?, lock_token = NULL, locked_until = NULL WHERE seq = ? AND lock_token = ?`),
      renew: this.db.prepare(`UPDATE jobs SET locked_until = ? WHERE seq = ? AND lock_token = ?`),
      takeOver: this.db.prepare(`UPDATE jobs SET locked_until = 0 WHERE state = 'active' AND lock_token IS NOT ?`),
      waiting: this.db.prepare<[string], { n: number }>(`SELECT COUNT(*) AS n FROM jobs WHERE queue = ? AND state = 'waiting'`),
      prune: this.db.prepare(`DELETE FROM jobs WHERE state = 'completed' AND finished_at < ?`),
    };
    if (pruneBefore !== null) this.stmts.prune.run(pruneBefore);
  }

  async write(ops: WriteOp[]): Promise<WriteResult> {
    if (!this.db.open) throw new Error('job queue is closed');
    const s = this.stmts;
    const results = this.db.transaction(() =>
      ops.map((op): number => {
        switch (op[0]) {
          case 'insert': {
            const r = s.insert.run(op[1], op[2], op[3], op[4], op[5], op[6]);
            return r.changes > 0 ? Number(r.lastInsertRowid) : 0;
          }
          case 'insertClaimed': {
            const r = s.insertClaimed.run(op[1], op[2], op[3], op[4], op[5], op[6], op[7], op[4]);
            return r.changes > 0 ? Number(r.lastInsertRowid) : 0;
          }
          case 'complete':
            return s.complete.run(op[3], op[1], op[2]).changes;
          case 'retry':
            return s.retry.run(op[3], op[4], op[1], op[2]).changes;
          case 'fail':
            return s.fail.run(op[3], op[4], op[1], op[2]).changes;
        }
      }),
    )();
    await this.wal.sync();
    return results;
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const { queue, now, free } = req;
    const rows = this.db.transaction(() => {
      const rows = req.lapseCheck ? this.stmts.lapsed.all(queue, now, free) : [];
      if (rows.length < free) for (const r of this.stmts.due.all(queue, now, free - rows.length)) rows.push(r);
      for (const r of rows) this.stmts.claim.run(req.token, req.lockedUntil, r.seq);
      return rows;
    })();
    let next: number | null = null;
    if (rows.length < free) {
      const run = this.stmts.nextRun.get(queue)?.t ?? null;
      const lapse = this.stmts.nextLapse.get(queue)?.t ?? null;
      for (const t of [run, lapse === null ? null : Math.max(lapse, req.lapseCheckAt)]) if (t !== null && (next === null || t < next)) next = t;
    }
    return { rows, next };
  }

  async get(queue: string, id: string): Promise<Row | null> {
    return this.stmts.get.get(queue, id) ?? null;
  }

  async waiting(queues: string[]): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const q of queues) out[q] = this.stmts.waiting.get(q)?.n ?? 0;
    return out;
  }

  async renew(seqs: number[], token: string, lockedUntil: number): Promise<void> {
    // One transaction: each statement on its own was a commit of its own (a WAL write each).
    this.db.transaction(() => {
      for (const seq of seqs) this.stmts.renew.run(lockedUntil, seq, token);
    })();
  }

  async takeOver(token: string): Promise<void> {
    this.stmts.takeOver.run(token);
  }

  async pollPlans(): Promise<string[]> {
    const plan = (st: Database.Statement, ...args: unknown[]) => (this.db.prepare(`EXPLAIN QUERY PLAN ${st.source}`).all(...args) as { detail: string }[]).map((r) => r.detail).join('; ');
    const s = this.stmts;
    return [plan(s.due, 'q', 0, 1), plan(s.lapsed, 'q', 0, 1), plan(s.nextRun, 'q'), plan(s.nextLapse, 'q')];
  }

  async close(): Promise<void> {
    await this.wal.close();
    if (this.db.open) this.db.close();
  }

  abandon(): void {
    void this.wal.close();
    if (this.db.open) this.db.close();
  }
}

type Method = 'write' | 'claim' | 'get' | 'waiting' | 'renew' | 'takeOver' | 'pollPlans';

const WORKER_TASK = 'embedded-jobs-store';

/** The store on its thread (sqlite-thread.ts): each call a request there, as JSON, its answer the result and the thread's syncs. */
class ThreadedJobsStore implements JobsStore {
  private readonly thread: SqliteThread;
  syncs = 0;
  /** Syncs of the threads lost before this one (each counts from 0), and which thread last answered. */
  private syncsBefore = 0;
  private lastSyncs = 0;
  private start = 1;

  constructor(file: string) {
    this.thread = new SqliteThread('job queue', new URL(import.meta.url), WORKER_TASK, { file });
  }

  private async call<T>(method: Method, ...args: unknown[]): Promise<T> {
    const [result, syncs] = JSON.parse(await this.thread.request(JSON.stringify([method, args]))) as [T, number];
    if (this.thread.starts !== this.start) {
      // Answered by a thread started after one was lost: its count starts at 0.
      this.start = this.thread.starts;
      this.syncsBefore = this.syncs;
      this.lastSyncs = 0;
    }
    this.lastSyncs = Math.max(this.lastSyncs, syncs);
    this.syncs = this.syncsBefore + this.lastSyncs;
    return result;
  }

  write = (ops: WriteOp[]) => this.call<WriteResult>('write', ops);
  claim = (req: ClaimRequest) => this.call<ClaimResult>('claim', req);
  get = (queue: string, id: string) => this.call<Row | null>('get', queue, id);
  waiting = (queues: string[]) => this.call<Record<string, number>>('waiting', queues);
  renew = (seqs: number[], token: string, lockedUntil: number) => this.call<void>('renew', seqs, token, lockedUntil);
  takeOver = (token: string) => this.call<void>('takeOver', token);
  pollPlans = () => this.call<string[]>('pollPlans');

  /** The thread answers what was sent, waits for its syncs and closes the file. */
  close(): Promise<void> {
    return this.thread.close();
  }

  abandon(): void {
    this.thread.abandon();
  }
}

/** The queue's store: on a thread of its own with `thread` (the built code only), else here. */
export function openJobsStore(file: string, pruneBefore: number, options: { thread?: boolean } = {}): JobsStore {
  const here = new SqliteJobsStore(file, pruneBefore);
  if (!options.thread) return here;
  if (!canRunThreads(file)) throw new Error('the job queue thread runs only from the built code, on a file');
  // Opened (and migrated, and pruned) here first, so a file that cannot be opened fails the
  // constructor as before, not each request later; the thread then opens it as it is.
  here.abandon();
  return new ThreadedJobsStore(file);
}

// The thread: opens the store, answers each request (a write once its sync is done).
serveOnThread<{ file: string }>(WORKER_TASK, ({ file }) => {
  const store = new SqliteJobsStore(file, null);
  return {
    async handle(request) {
      const [method, args] = JSON.parse(request) as [Method, unknown[]];
      const result = await (store[method] as (...a: unknown[]) => Promise<unknown>)(...args);
      return JSON.stringify([result ?? null, store.syncs]);
    },
    close: () => store.close(),
  };
});
