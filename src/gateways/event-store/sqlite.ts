/**
 * Embedded event store: one SQLite file in WAL mode, durable writes (the WAL synced after each
 * commit, before any caller is answered).
 *
 * Group commit: appends that arrive in the same turn of the event loop are stored in one transaction,
 * each checked against its own expected revision, so a conflict fails only its own append (see
 * sqlite-group.ts). With the writer thread (EMBEDDED_THREADS, built code) the transaction runs there
 * (sqlite-writer.ts), which syncs at each commit; a group is posted as soon as it forms, and the
 * thread stores the groups waiting for it together. Otherwise (and always from the TypeScript
 * sources) it runs on this thread and the WAL is synced off the event loop (WalSync): transactions
 * committed while a sync runs share the next one. Either way
 * every caller is answered after the sync covering its commit, so an acknowledged append survives
 * kill -9 and power loss; until then this process neither announces nor reads back those events.
 */
import type Database from 'better-sqlite3';
import { WalSync, openSqlite } from '../sqlite.js';
import { WalCheckpointer } from '../wal-checkpointer.js';
import { EventEmitter } from 'node:events';
import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type Subscription,
} from './port.js';
import { pollingSubscription } from './subscription.js';
import { GroupWriter, NO_METADATA, deepFreeze, prepare, type Committed, type PreparedAppend } from './sqlite-group.js';
import { LogScanner, type ScanTypes } from './sqlite-scan.js';
import { RecentEvents } from './sqlite-tail.js';
import { WriterThread } from './sqlite-writer.js';
import { type Layout, type Row, firstEventSql, openLayout, readStreamSql, streamHeadSql, toRecorded } from './sqlite-layout.js';

interface Pending {
  appends: StreamAppend[];
  onCommitted?: ((results: AppendResult[]) => void) | undefined;
  resolve: (r: AppendResult[]) => void;
  reject: (err: unknown) => void;
}

/** Appends stored in one transaction at most (a burst beyond it takes several). */
const MAX_GROUP = 512;
/** Chained: a read of fewer events than this from a stream's end steps back row by row (the recursive query costs ~25 µs before its first row). */
const SHORT_WALK = 8;

export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly wal: WalSync;
  private pending: Pending[] = [];
  private flushScheduled = false;
  /** Positions of the events of groups committed and not yet synced, oldest group first. */
  private unsynced: { lo: number; hi: number }[] = [];
  /** The newest synced events: what the subscriptions of this process read (see sqlite-tail.ts). */
  private readonly recent: RecentEvents;
  /** The last group's sync (on this thread) or the last group posted (on the writer thread, which answers in order). */
  private syncing: Promise<void> = Promise.resolve();
  /** On the writer thread: groups posted and not yet answered (the thread stores those waiting for it together). */
  private inFlight = 0;
  /** `decoded`: events decoded for readers (once per stored event, then per row read from the file). */
  private readonly counts = { commits: 0, appends: 0, decoded: 0 };
  private readonly emitter = new EventEmitter();
  private head = 0;
  private closed = false;
  private readonly stmts;
  /** Replay's readers (sqlite-scan.ts). */
  private readonly scanner: LogScanner;
  /** How the file keeps streams (sqlite-layout.ts). */
  readonly layout: Layout;

  /**
   * `file` may be ':memory:' for tests. `writerThread`: the module the writer thread runs
   * (`writerThreadModule` of the built code; tests point it at a build's); by default, or null, the
   * group commits on this thread, and then `checkpointThread` checkpoints its WAL (wal-checkpointer.ts).
   */
  constructor(
    file: string,
    private readonly clock: () => number = Date.now,
    options: { writerThread?: URL | null; checkpointThread?: URL | null } = {},
  ) {
    // NORMAL plus WalSync before answering: an acknowledged append survives power loss / kill -9.
    this.db = openSqlite(file, 'NORMAL');
    this.wal = new WalSync(file);
    // A new file is made `chained`; a file made before keeps its `indexed` layout (sqlite-layout.ts).
    this.layout = openLayout(this.db);
    this.emitter.setMaxListeners(0);
    const first = firstEventSql(this.layout);
    this.stmts = {
      readStream: this.db.prepare<[{ stream: string; from: number; below: number; limit: number }], Row>(readStreamSql(this.layout)),
      firstEvent: first === null ? null : this.db.prepare<[{ stream: string; below: number }], Row>(first),
      // Read before the stream: a lookup, far below the fixed cost of the chained walk's recursive query.
      streamHead: this.db.prepare<[string], { revision: number; position: number }>(streamHeadSql(this.layout)),
      eventAt: this.layout === 'chained' ? this.db.prepare<[number], Row & { prev: number | null }>('SELECT * FROM events WHERE position = ?') : null,
      readAll: this.db.prepare<[number, number, number], Row>('SELECT * FROM events WHERE position > ? AND position < ? ORDER BY position LIMIT ?'),
      head: this.db.prepare<[], { p: number | null }>('SELECT MAX(position) AS p FROM events'),
    };
    this.scanner = new LogScanner(this.db, () => this.assertOpen());
    this.head = this.stmts.head.get()?.p ?? 0;
    const dataVersion = this.db.prepare<[], number>('PRAGMA data_version').pluck();
    this.recent = new RecentEvents(() => dataVersion.get()!);
    const threadModule = options.writerThread ?? null;
    if (threadModule && file !== ':memory:') this.thread = new WriterThread(file, threadModule);
    else this.writer = new GroupWriter(this.db);
    this.checkpointer = this.writer && WalCheckpointer.start(this.db, options.checkpointThread);
  }

  /** With `checkpointThread`: the thread checkpointing the WAL. */
  readonly checkpointer: WalCheckpointer | null;

  /** Commits, the appends they carried and the WAL syncs (fsyncs) they took: what group commit saves. */
  get stats(): { commits: number; appends: number; syncs: number; decoded: number } {
    return { ...this.counts, syncs: this.wal.syncs + this.threadSyncs };
  }

  /** Syncs of the writer thread: one per commit that stored something (synchronous=FULL). */
  private threadSyncs = 0;

  /** The file the log is in. */
  get file(): string {
    return this.db.name;
  }

  /** Where groups are stored: on the writer thread (built code), or else on this thread. */
  private readonly thread: WriterThread | null = null;
  private readonly writer: GroupWriter | null = null;

  async appendToStream(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    const onCommitted = options.onCommitted;
    const [result] = await this.append([{ streamId, events, expectedRevision: options.expectedRevision ?? 'any' }], onCommitted && ((r) => onCommitted(r[0]!)));
    return result!;
  }

  appendToStreams(appends: StreamAppend[], options: { onCommitted?: (results: AppendResult[]) => void } = {}): Promise<AppendResult[]> {
    return this.append(appends, options.onCommitted);
  }

  private append(appends: StreamAppend[], onCommitted?: (r: AppendResult[]) => void): Promise<AppendResult[]> {
    this.assertOpen();
    return new Promise((resolve, reject) => {
      this.pending.push({ appends, resolve, reject, onCommitted });
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
    if (this.pending.length > 0) this.scheduleFlush();
    if (group.length === 0) return;
    if (this.closed) {
      for (const p of group) p.reject(new Error('event store is closed'));
      return;
    }
    const time = this.clock();
    const ready: Pending[] = [];
    const prepared: PreparedAppend[][] = [];
    for (const p of group) {
      try {
        prepared.push(p.appends.map((a) => prepare(a, time)));
        ready.push(p);
      } catch (err) {
        p.reject(err); // data that is not JSON: nothing of it reaches the log
      }
    }
    if (ready.length === 0) return;
    if (this.thread) {
      this.inFlight++;
      // The thread answers in the order it was asked: the last promise settles after the others.
      this.syncing = this.thread.commit(prepared).then(
        (c) => this.committed(ready, prepared, c, true, c.head),
        // The commit itself failed (or the thread died): nothing of the group is known to be stored.
        (err) => ready.forEach((p) => p.reject(err)),
      ).finally(() => {
        this.inFlight--;
      });
      return;
    }
    let c: Committed;
    try {
      c = this.writer!.commit(prepared);
    } catch (err) {
      // The commit itself failed: nothing of the group is stored.
      for (const p of ready) p.reject(err);
      return;
    }
    this.committed(ready, prepared, c, false);
  }

  private scheduleFlush() {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /**
   * A group's commit is done: its events decoded once for the readers, its callers answered once it is
   * durable. `txHead` (writer thread): the last position of the transaction that stored the group,
   * which may have stored the groups posted after it too.
   */
  private committed(group: Pending[], prepared: PreparedAppend[][], { outcomes, inserted }: Committed, durable: boolean, txHead = 0) {
    group.forEach((p, i) => {
      const o = outcomes[i]!;
      if (!p.onCommitted || !('ok' in o)) return;
      try {
        p.onCommitted(o.ok);
      } catch {
        /* a caller's hook must not fail the group */
      }
    });
    this.counts.commits++;
    this.counts.appends += group.length;
    // Decoded from what was stored, so no caller's object is shared with the readers.
    const stored: RecordedEvent[] = inserted.map(([c, a, i, position, id, revision]) => {
      const append = prepared[c]![a]!;
      const e = append.events[i]!;
      return {
        position,
        id,
        streamId: append.streamId,
        revision,
        type: e.type,
        data: deepFreeze(JSON.parse(e.data)),
        metadata: e.metadata === '{}' ? NO_METADATA : deepFreeze(JSON.parse(e.metadata)),
        time: append.time,
      };
    });
    this.counts.decoded += stored.length;
    const grew = stored.length > 0;
    // One transaction: no one else inserted between its first and last position.
    const newHead = grew ? stored[stored.length - 1]!.position : 0;
    const answer = () => {
      if (grew) {
        if (!durable) this.unsynced.shift();
        this.head = Math.max(this.head, newHead);
        this.recent.keep(stored);
      }
      group.forEach((p, i) => {
        const o = outcomes[i]!;
        if ('ok' in o) p.resolve(o.ok);
        else p.reject(o.err);
      });
      if (grew) this.emitter.emit('appended', this.head);
    };
    if (durable) {
      if (grew) {
        this.threadSyncs++;
        // The writer thread's commit moved this connection's data_version: it is ours, unless the file holds more.
        this.recent.ownCommit(Math.max(newHead, txHead), () => this.stmts.head.get()?.p ?? 0);
      }
      answer();
      return;
    }
    if (grew) this.unsynced.push({ lo: stored[0]!.position, hi: newHead });
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
    const from = options.fromRevision ?? 0;
    const below = this.syncedBelow();
    // A stream's first event (a check of what the stream is) without walking it from its head.
    if (from === 0 && options.maxCount === 1 && this.stmts.firstEvent) return this.stmts.firstEvent.all({ stream: streamId, below }).map(toRecorded);
    // Nothing after the revision asked for (a cached aggregate asking for what is new, most often) is
    // answered by the head alone, and (chained) a few events by stepping back from it.
    const head = this.stmts.streamHead.get(streamId);
    if (head === undefined || head.revision < from) return [];
    if (this.stmts.eventAt && head.revision - from < SHORT_WALK) return this.walkBack(head.position, from, below, options.maxCount ?? -1);
    return this.stmts.readStream.all({ stream: streamId, from, below, limit: options.maxCount ?? -1 }).map(toRecorded);
  }

  /** Chained: the events from revision `from` up to the head at `position`, one row at a time back from it. */
  private walkBack(position: number, from: number, below: number, maxCount: number): RecordedEvent[] {
    const rows: Row[] = [];
    for (let at: number | null = position; at !== null; ) {
      const row: (Row & { prev: number | null }) | undefined = this.stmts.eventAt!.get(at);
      if (!row || row.revision < from) break;
      if (row.position < below) rows.push(row);
      if (row.revision === from) break;
      at = row.prev;
    }
    rows.reverse();
    return (maxCount < 0 ? rows : rows.slice(0, maxCount)).map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const after = options.after ?? 0;
    const maxCount = options.maxCount ?? -1;
    // The tail holds only synced events; past it (another process's appends) the file answers.
    const recent = this.recent.read(after, maxCount);
    if (recent) return recent;
    // Not what this process committed and has not yet synced: no one may act on it before its writer is answered.
    const rows = this.stmts.readAll.all(after, this.syncedBelow(), maxCount);
    if (rows.length === 0 && this.unsynced.length === 0) this.recent.sawNothingAfter(after);
    this.counts.decoded += rows.length;
    return rows.map(toRecorded);
  }

  /** Replay's reader: events in global order like `readAll`, one at a time (LogScanner.scanRange, sqlite-scan.ts). */
  scanRange(after: number, upTo: number, types?: ScanTypes, pageSize = 4096): Generator<RecordedEvent> {
    return this.scanner.scanRange(after, upTo, types, pageSize);
  }

  /** Replay's reader for other threads: the events of `scanRange` as pages (LogScanner.scanPages, sqlite-scan.ts). */
  scanPages(after: number, upTo: number, data: readonly string[] | null, pageSize = 4096): Generator<Buffer> {
    return this.scanner.scanPages(after, upTo, data, pageSize);
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
      readPage: (after) => this.readAll({ after, maxCount: 500 }),
      onAppend: (listener) => {
        this.emitter.on('appended', listener);
        return () => this.emitter.off('appended', listener);
      },
      // Safety net for appends made by another process on the same file.
      pollMs: 250,
      isClosed: () => this.closed,
    });
  }

  /** Called with the new head after each group this process stored is synced (an analytics thread is told). */
  onAppended(listener: (head: number) => void): () => void {
    this.emitter.on('appended', listener);
    return () => this.emitter.off('appended', listener);
  }

  /** Another connection has appended (a thread that only reads is told so): subscriptions read on now, not at the next poll. */
  noticeAppends(): void {
    if (!this.closed) this.emitter.emit('appended', this.head);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Appends already accepted are stored (and answered) before the file closes.
    if (this.thread) {
      while (this.pending.length > 0 || this.inFlight > 0) {
        if (this.pending.length > 0) this.flush();
        await this.syncing;
      }
    } else while (this.pending.length > 0) this.flush();
    this.closed = true;
    await this.syncing;
    await this.thread?.close();
    await this.wal.close();
    await this.checkpointer?.close();
    this.emitter.emit('appended', this.head);
    this.db.close();
  }

  private assertOpen() {
    if (this.closed) throw new Error('event store is closed');
  }
}
