/** Opening an embedded SQLite file the way every embedded adapter wants it. */
import Database from 'better-sqlite3';
import { closeSync, fdatasync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';

/**
 * WAL (readers never block the writer) and a busy timeout (several processes may share a file).
 * `synchronous`: FULL where an acknowledged write must survive power loss or kill -9 and the caller
 * waits for SQLite's own sync; NORMAL where the data can be rebuilt (read models replay from the
 * log), or where the caller syncs the WAL itself before acknowledging (see WalSync).
 */
export function openSqlite(file: string, synchronous: 'FULL' | 'NORMAL'): Database.Database {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('busy_timeout = 5000');
  // Statement journals (the group commit's savepoints) in memory: past 64 KiB they were spilled to
  // temporary files, ~10 page writes per simulated call for nothing that must survive a crash.
  db.pragma('temp_store = MEMORY');
  return db;
}

/** Rows a statement of RowBatch inserts at most. */
const BATCH_ROWS = 64;

/**
 * One INSERT run for many rows as statements of up to BATCH_ROWS rows each, in order (the same as a
 * statement per row, row after row): replay writes hundreds of thousands of rows, and a statement per
 * row cost more in the calls into SQLite than in the rows.
 */
export class RowBatch {
  private readonly values: unknown[] = [];
  private rows = 0;
  private readonly statements = new Map<number, Database.Statement>();

  /** `head` VALUES (?, ...) x rows `tail`, with `columns` parameters a row. */
  constructor(
    private readonly db: Database.Database,
    private readonly head: string,
    private readonly columns: number,
    private readonly tail: string,
  ) {}

  private statement(rows: number): Database.Statement {
    let s = this.statements.get(rows);
    if (!s) {
      const row = `(${new Array(this.columns).fill('?').join(', ')})`;
      this.statements.set(rows, (s = this.db.prepare(`${this.head} VALUES ${new Array(rows).fill(row).join(', ')} ${this.tail}`)));
    }
    return s;
  }

  add(...row: unknown[]): void {
    for (let i = 0; i < row.length; i++) this.values.push(row[i]);
    if (++this.rows === BATCH_ROWS) this.flush();
  }

  /** Forgets the rows added since the last flush (those of a write that failed). */
  discard(): void {
    this.values.length = 0;
    this.rows = 0;
  }

  /** Runs the rows added since the last flush. */
  flush(): void {
    if (this.rows === 0) return;
    try {
      this.statement(this.rows).run(this.values);
    } finally {
      this.values.length = 0;
      this.rows = 0;
    }
  }
}

/**
 * Durability without blocking the event loop. With `synchronous=NORMAL` in WAL mode a commit
 * writes its frames to the WAL without syncing it; `synchronous=FULL` adds exactly one sync of
 * the WAL after each commit, but better-sqlite3 runs it on the event loop (~5 ms here, during
 * which nothing else runs). WalSync does that same sync on libuv's thread pool: the caller commits
 * (NORMAL), then awaits `sync()` and acknowledges only after it, which is FULL's guarantee. Calls
 * made while syncs run share the next one, so a burst of commits costs a few syncs, not one each.
 * Two may run at once, so a commit made while one runs need not wait for it to end. A sync covers
 * every commit made before it started, whichever finishes first: fdatasync on Linux flushes the
 * file's dirty pages whichever descriptor wrote them.
 */
const MAX_SYNCS_RUNNING = 2;

export class WalSync {
  private fd: number | null = null;
  /** Syncs asked for so far; a sync started after ask n covers it. */
  private asked = 0;
  private waiting: { n: number; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private running = 0;
  /** The highest ask a running or finished sync covers. */
  private started = 0;
  private idle: (() => void)[] = [];
  /** Syncs run: what the bench reports as fsyncs. */
  syncs = 0;

  constructor(private readonly dbFile: string) {}

  /** Resolves once everything committed to the WAL before the call is on disk. */
  sync(): Promise<void> {
    if (this.dbFile === ':memory:') return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiting.push({ n: ++this.asked, resolve, reject });
      if (this.running < MAX_SYNCS_RUNNING) this.round();
    });
  }

  /** Waits for the syncs asked for so far, then closes the descriptor. */
  async close(): Promise<void> {
    if (this.running > 0) await new Promise<void>((r) => this.idle.push(r));
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private open(): number {
    if (this.fd === null) {
      this.fd = openSync(`${this.dbFile}-wal`, 'r');
      // The WAL may have just been created: its directory entry must be durable too.
      const dir = openSync(path.dirname(this.dbFile), 'r');
      try {
        fsyncSync(dir);
      } finally {
        closeSync(dir);
      }
    }
    return this.fd;
  }

  private round() {
    const upTo = this.asked;
    this.started = upTo;
    this.running++;
    let fd: number;
    try {
      fd = this.open();
    } catch (err) {
      this.finish(upTo, err);
      return;
    }
    this.syncs++;
    fdatasync(fd, (err) => this.finish(upTo, err));
  }

  /** Answers every ask up to `upTo` (a sync may finish before an earlier one: it covers its asks too). */
  private finish(upTo: number, err: unknown) {
    this.running--;
    while (this.waiting.length > 0 && this.waiting[0]!.n <= upTo) {
      const w = this.waiting.shift()!;
      if (err) w.reject(err);
      else w.resolve();
    }
    if (this.asked > this.started && this.running < MAX_SYNCS_RUNNING) this.round();
    else if (this.running === 0) for (const r of this.idle.splice(0)) r();
  }
}
