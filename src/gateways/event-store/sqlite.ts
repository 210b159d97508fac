/**
 * Embedded event store: one SQLite file in WAL mode, durable writes (the WAL synced after each
 * commit, before any caller is answered).
 *
 * Group commit: appends that arrive in the same turn of the event loop are stored in one transaction,
 * each inside its own savepoint and checked against its own expected revision, so a conflict fails
 * only its own append. The WAL is then synced off the event loop (WalSync): transactions committed
 * while a sync runs share the next one. Every caller is answered after the sync covering its commit,
 * so an acknowledged append survives kill -9 and power loss exactly as with synchronous=FULL; until
 * then this process neither announces nor reads back those events.
 */
import type Database from 'better-sqlite3';
import { WalSync, openSqlite } from '../sqlite.js';
import { EventEmitter } from 'node:events';
// Time-ordered ids: each lands at the end of the id index, not on a random page of it (a WAL page per event).
import { v7 as newEventId } from 'uuid';
import {
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type Subscription,
  WrongExpectedRevisionError,
  matchesExpected,
} from './port.js';
import { SharedTail, pollingSubscription } from './subscription.js';

interface Row {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  time: number;
}

const NO_METADATA: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

const toRecorded = (r: Row): RecordedEvent => ({
  position: r.position,
  id: r.id,
  streamId: r.stream_id,
  revision: r.revision,
  type: r.type,
  data: JSON.parse(r.data),
  metadata: JSON.parse(r.metadata),
  time: r.time,
});

interface Pending {
  appends: StreamAppend[];
  resolve: (r: AppendResult[]) => void;
  reject: (err: unknown) => void;
}

/** Appends stored in one transaction at most (a burst beyond it takes several). */
const MAX_GROUP = 512;

export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly wal: WalSync;
  private pending: Pending[] = [];
  private flushScheduled = false;
  /** Positions of the events of groups committed and not yet synced, oldest group first. */
  private unsynced: { lo: number; hi: number }[] = [];
  /** Positions inserted by the group being committed (a rolled-back savepoint takes its own back). */
  private inserted: number[] = [];
  private syncing: Promise<void> = Promise.resolve();
  private readonly counts = { commits: 0, appends: 0 };
  private readonly emitter = new EventEmitter();
  private head = 0;
  private closed = false;
  private readonly stmts;
  /** Every subscription's pages: each event read and decoded once, not once per subscriber. */
  readonly tail = new SharedTail((after, max) => this.readAll({ after, maxCount: max }));

  /** `file` may be ':memory:' for tests. */
  constructor(file: string, private readonly clock: () => number = Date.now) {
    // NORMAL plus WalSync before answering: an acknowledged append survives power loss / kill -9.
    this.db = openSqlite(file, 'NORMAL');
    this.wal = new WalSync(file);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        stream_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        metadata TEXT NOT NULL,
        time INTEGER NOT NULL,
        UNIQUE (stream_id, revision)
      );
    `);
    this.emitter.setMaxListeners(0);
    this.stmts = {
      streamHead: this.db.prepare<[string], { revision: number; position: number }>(
        'SELECT revision, position FROM events WHERE stream_id = ? ORDER BY revision DESC LIMIT 1',
      ),
      insert: this.db.prepare(
        'INSERT INTO events (id, stream_id, revision, type, data, metadata, time) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      byId: this.db.prepare<[string], { stream_id: string }>('SELECT stream_id FROM events WHERE id = ?'),
      readStream: this.db.prepare<[string, number, number, number], Row>(
        'SELECT * FROM events WHERE stream_id = ? AND revision >= ? AND position < ? ORDER BY revision LIMIT ?',
      ),
      readAll: this.db.prepare<[number, number, number], Row>('SELECT * FROM events WHERE position > ? AND position < ? ORDER BY position LIMIT ?'),
      head: this.db.prepare<[], { p: number | null }>('SELECT MAX(position) AS p FROM events'),
      scan: this.db.prepare<[number, number], [number, string, string, string, number]>(
        'SELECT position, stream_id, type, data, time FROM events WHERE position > ? ORDER BY position LIMIT ?',
      ).raw(),
    };
    this.head = this.stmts.head.get()?.p ?? 0;
    this.appendTx = this.db.transaction((batch: StreamAppend[]) => this.appendBatch(batch));
    // IMMEDIATE: the write lock is taken (waiting out busy_timeout) before the revisions are read.
    // A deferred transaction that reads first fails at once with "database is locked" when
    // another process (ROLES split on one DATA_DIR) committed in between.
    this.groupTx = this.db.transaction((run: () => void) => run()).immediate;
  }

  /** Commits, the appends they carried and the WAL syncs (fsyncs) they took: what group commit saves. */
  get stats(): { commits: number; appends: number; syncs: number } {
    return { ...this.counts, syncs: this.wal.syncs };
  }

  /** The file the log is in. */
  get file(): string {
    return this.db.name;
  }

  /** One command's appends; called inside the group's transaction, so this is a savepoint. */
  private readonly appendTx: (appends: StreamAppend[]) => AppendResult[];
  /** The group's transaction (wrappers made once: making one per call showed in profiles). */
  private readonly groupTx: (run: () => void) => void;

  private appendBatch(batch: StreamAppend[]): AppendResult[] {
    const results: AppendResult[] = [];
    for (const { streamId, events, expectedRevision } of batch) {
      const last = this.stmts.streamHead.get(streamId);
      let revision = last?.revision ?? -1;
      let position = last?.position ?? 0;
      // Idempotent retry: events whose ids are already stored (in this stream) are skipped.
      const fresh = events.filter((e) => {
        if (!e.id) return true;
        const found = this.stmts.byId.get(e.id);
        if (found && found.stream_id !== streamId) {
          throw new Error(`event id ${e.id} already used in stream ${found.stream_id}`);
        }
        return !found;
      });
      if (fresh.length === 0 && events.length > 0) {
        results.push({ nextExpectedRevision: revision, position });
        continue;
      }
      if (!matchesExpected(expectedRevision, revision)) {
        throw new WrongExpectedRevisionError(streamId, expectedRevision, revision);
      }
      const time = this.clock();
      for (const e of fresh) {
        revision += 1;
        const info = this.stmts.insert.run(
          e.id ?? newEventId(),
          streamId,
          revision,
          e.type,
          JSON.stringify(e.data ?? null),
          JSON.stringify(e.metadata ?? {}),
          time,
        );
        position = Number(info.lastInsertRowid);
        this.inserted.push(position);
      }
      results.push({ nextExpectedRevision: revision, position });
    }
    return results;
  }

  async appendToStream(
    streamId: string,
    events: NewEvent[],
    options: { expectedRevision?: ExpectedRevision } = {},
  ): Promise<AppendResult> {
    const [result] = await this.appendToStreams([{ streamId, events, expectedRevision: options.expectedRevision ?? 'any' }]);
    return result!;
  }

  appendToStreams(appends: StreamAppend[]): Promise<AppendResult[]> {
    this.assertOpen();
    return new Promise((resolve, reject) => {
      this.pending.push({ appends, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // After the I/O callbacks of this turn: every append they made joins the group.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush() {
    this.flushScheduled = false;
    const group = this.pending.splice(0, MAX_GROUP);
    if (this.pending.length > 0) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    if (group.length === 0) return;
    if (this.closed) {
      for (const p of group) p.reject(new Error('event store is closed'));
      return;
    }
    const outcomes: ({ ok: AppendResult[] } | { err: unknown })[] = [];
    this.inserted = [];
    try {
      this.groupTx(() => {
        for (const p of group) {
          const before = this.inserted.length;
          try {
            outcomes.push({ ok: this.appendTx(p.appends) });
          } catch (err) {
            this.inserted.length = before;
            outcomes.push({ err }); // its savepoint is rolled back; the others stand
          }
        }
      });
    } catch (err) {
      // The commit itself failed: nothing of the group is stored.
      for (const p of group) p.reject(err);
      return;
    }
    this.counts.commits++;
    this.counts.appends += group.length;
    const grew = this.inserted.length > 0;
    // One transaction: no one else inserted between its first and last position.
    const newHead = grew ? Math.max(...this.inserted) : 0;
    if (grew) this.unsynced.push({ lo: Math.min(...this.inserted), hi: newHead });
    const answer = () => {
      if (grew) {
        this.unsynced.shift();
        this.head = Math.max(this.head, newHead);
      }
      group.forEach((p, i) => {
        const o = outcomes[i]!;
        if ('ok' in o) p.resolve(o.ok);
        else p.reject(o.err);
      });
      if (grew) this.emitter.emit('appended', this.head);
    };
    // Nothing new (conflicts, idempotent retries): the answer still waits for the sync, as it may
    // rest on events of an earlier group that is not yet on disk.
    this.syncing = this.wal.sync().then(answer, (err) => {
      if (grew) this.unsynced.shift();
      for (const p of group) p.reject(err);
    });
  }

  /** Reads see positions below this: not this process's appends committed and not yet synced. */
  private syncedBelow(): number {
    return this.unsynced[0]?.lo ?? Number.MAX_SAFE_INTEGER;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    // Committed by this process and not yet synced: invisible until its writer is answered (a command
    // deciding on a state without it conflicts on appending, and decides again).
    return this.stmts.readStream.all(streamId, options.fromRevision ?? 0, this.syncedBelow(), options.maxCount ?? -1).map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    // Not what this process committed and has not yet synced: no one may act on it before its writer is answered.
    return this.stmts.readAll.all(options.after ?? 0, this.syncedBelow(), options.maxCount ?? -1).map(toRecorded);
  }

  /**
   * Replay's reader: events in global order like `readAll`, without what projections never read (id,
   * revision and metadata are left empty), one at a time, each decoded only when reached so it is
   * garbage before the next (a page decoded at once outlives the young generation).
   */
  *scanRange(after: number, upTo: number, decode?: (type: string) => boolean, pageSize = 4096): Generator<RecordedEvent> {
    this.assertOpen();
    // Rows a page at a time (one statement step per row costs more than the rows), decoded one by one.
    while (after < upTo) {
      const rows = this.stmts.scan.all(after, Math.min(pageSize, upTo - after));
      if (rows.length === 0) return;
      for (const [position, streamId, type, data, time] of rows) {
        if (position > upTo) return;
        // An event the reader will not look into (`decode` says no) comes with null data.
        yield { id: '', streamId, revision: 0, position, type, data: !decode || decode(type) ? JSON.parse(data) : null, metadata: NO_METADATA, time };
      }
      after = rows[rows.length - 1]![0];
    }
  }

  private headQuery: Promise<number> | null = null;

  /**
   * The position a reader must wait for to see every acknowledged append: the log's head, less this
   * process's appends committed and not yet synced (no one was answered for those yet).
   */
  headPosition(): Promise<number> {
    this.assertOpen();
    // Another process may share the file (ROLES split on one host): read the real head. Every request
    // asks (read-your-writes), so the callers of one turn of the event loop share one query, run
    // after all of them asked: it sees everything stored before any of them.
    this.headQuery ??= new Promise((resolve) =>
      setImmediate(() => {
        this.headQuery = null;
        let head = this.closed ? this.head : Math.max(this.head, this.stmts.head.get()?.p ?? 0);
        for (let i = this.unsynced.length - 1; i >= 0; i--) {
          const r = this.unsynced[i]!;
          if (head >= r.lo && head <= r.hi) head = r.lo - 1;
        }
        resolve(head);
      }),
    );
    return this.headQuery;
  }

  subscribeToAll(options: { after?: number } = {}): Subscription {
    return pollingSubscription({
      after: options.after ?? 0,
      readPage: (after) => this.tail.page(after, 500),
      onAppend: (listener) => {
        this.emitter.on('appended', listener);
        return () => this.emitter.off('appended', listener);
      },
      // Safety net for appends made by another process on the same file.
      pollMs: 250,
      isClosed: () => this.closed,
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Appends already accepted are stored (and answered) before the file closes.
    while (this.pending.length > 0) this.flush();
    this.closed = true;
    await this.syncing;
    await this.wal.close();
    this.emitter.emit('appended', this.head);
    this.db.close();
  }

  private assertOpen() {
    if (this.closed) throw new Error('event store is closed');
  }
}
