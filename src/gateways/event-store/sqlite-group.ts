/**
 * The SQLite event log's group commit: the appends of many commands stored in one transaction, each
 * checked against its own expected revision, and a command whose append is refused (a conflict, an id
 * used in another stream) leaves the others standing.
 *
 * Fast path without a savepoint per command: every check of a command runs before its first insert,
 * so a refused command has written nothing and needs no rollback. Only a failure after an insert (a
 * command that repeats an event id, or names one stream twice) needs one: then the whole transaction
 * is rolled back and the group done again with a savepoint per command, as it was before.
 */
import type Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { type AppendResult, type ExpectedRevision, type StreamAppend, WrongExpectedRevisionError, matchesExpected } from './port.js';
import { LogWrites } from './sqlite-layout.js';

export type Outcome = { ok: AppendResult[] } | { err: unknown };

/** An event ready to store: its data and metadata already JSON (metadata '{}' when it has none). */
export interface PreparedEvent {
  /** The caller's id (an idempotent retry is recognised by it), or null: one is made. */
  id: string | null;
  type: string;
  data: string;
  metadata: string;
}

/** One stream's part of a command, ready to store: the time is the command's, given by its process's clock. */
export interface PreparedAppend {
  streamId: string;
  expectedRevision: ExpectedRevision;
  time: number;
  events: PreparedEvent[];
}

/**
 * An event a commit stored: which command, which of its appends, which of its events, and what the
 * log gave it. Numbers and one string, so a writer on another thread answers in a small message.
 */
export type InsertedRow = [command: number, append: number, event: number, position: number, id: string, revision: number];

/** What a group's commit did: one outcome per command and the rows stored, in position order. */
export interface Committed {
  outcomes: Outcome[];
  inserted: InsertedRow[];
}

/** Metadata of the events that carry none: frozen, shared. */
export const NO_METADATA: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/** Frozen: the events kept for readers are shared by every reader in the process. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** timeOrderedId's per-process parts: random bits after the time (rand_a, the variant and 14 bits of rand_b), and a counter. */
const ID_RANDOM = (() => {
  const hex = randomBytes(3).toString('hex');
  return `${hex.slice(0, 3)}-${'89ab'[parseInt(hex[3]!, 16) & 3]}${hex.slice(3, 6)}-`;
})();
let idCounter = randomBytes(6).readUIntBE(0, 6);
let idMs = -1;
let idPrefix = '';

/**
 * A time-ordered id (UUID version 7 layout) for an event that brings none: the unique index on ids
 * then grows at its end, so a group's commit dirties one page of it instead of one per event. The
 * last 48 bits are a counter from a random start (RFC 9562, 6.2 method 1), the rest after the time
 * random per process: a fresh random UUID per event cost more than the rest of its id.
 */
export function timeOrderedId(now: number): string {
  if (now !== idMs) {
    idMs = now;
    const ts = now.toString(16).padStart(12, '0');
    idPrefix = `${ts.slice(0, 8)}-${ts.slice(8, 12)}-7${ID_RANDOM}`;
  }
  idCounter = idCounter >= 0xffff_ffff_ffff ? 0 : idCounter + 1;
  return idPrefix + idCounter.toString(16).padStart(12, '0');
}

/** One stream's append, checked and ready to insert. */
interface Planned {
  streamId: string;
  time: number;
  /** Indexes (in the append) of the events to insert: idempotent retries left out. */
  fresh: number[];
  events: PreparedEvent[];
  revision: number;
  position: number;
}

/** Stream heads kept in memory (see GroupWriter.heads); past it they are forgotten and read again. */
const MAX_HEADS = 50_000;

/** Thrown inside the fast path once a command has inserted and then failed: redo with savepoints. */
const NEEDS_SAVEPOINTS = Symbol('needs savepoints');

export class GroupWriter {
  /** Rows inserted by the group being committed, in position order. */
  private inserted: InsertedRow[] = [];
  /** The command and append being stored: where `insert` files its rows. */
  private at = { command: 0, append: 0 };
  private readonly stmts;
  /** The inserts and stream heads of the file's layout (sqlite-layout.ts). */
  private readonly log: LogWrites;
  private readonly groupTx: (run: () => void) => void;
  private readonly savepoint: (appends: PreparedAppend[]) => AppendResult[];
  /**
   * The head (last revision and position; -1 and 0: no stream) of streams this writer read or wrote,
   * as of its last commit: an append checks its expected revision against it without a query. True
   * only while no other connection wrote the file (another process on the same DATA_DIR, a tool): each
   * group compares SQLite's data_version, which moves only on other connections' commits, once it holds
   * the write lock, and forgets every head if it moved.
   */
  private readonly heads = new Map<string, { revision: number; position: number }>();
  private dataVersion = -1;
  /** Streams written by the transaction being run: their heads are read from it, not from `heads`. */
  private readonly touched = new Set<string>();

  constructor(db: Database.Database) {
    this.log = new LogWrites(db);
    this.stmts = {
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
    };
    // IMMEDIATE: the write lock is taken (waiting out busy_timeout) before the revisions are read.
    // A deferred transaction that reads first fails at once with "database is locked" when
    // another process (ROLES split on one DATA_DIR) committed in between.
    this.groupTx = db.transaction((run: () => void) => run()).immediate;
    // Inside the group's transaction this is a savepoint (wrappers made once: one per call showed in profiles).
    this.savepoint = db.transaction((appends: PreparedAppend[]) => {
      const results: AppendResult[] = [];
      // One stream at a time: a command naming a stream twice sees its own first insert.
      appends.forEach((a, i) => {
        this.at.append = i;
        results.push(this.insert(this.plan(a)));
      });
      return results;
    });
  }

  /** Stores the group in one transaction: one outcome per command; throws when the commit itself failed. */
  commit(group: PreparedAppend[][]): Committed {
    try {
      return this.run(group, false);
    } catch (err) {
      if (err !== NEEDS_SAVEPOINTS) throw err;
      return this.run(group, true);
    }
  }

  private run(group: PreparedAppend[][], savepoints: boolean): Committed {
    const outcomes: Outcome[] = [];
    this.inserted = [];
    this.touched.clear();
    this.groupTx(() => {
      // The write lock is held: no one else commits until this transaction ends.
      const version = this.stmts.dataVersion.get()!;
      if (version !== this.dataVersion) {
        this.heads.clear();
        this.dataVersion = version;
      }
      for (let c = 0; c < group.length; c++) {
        const appends = group[c]!;
        this.at.command = c;
        this.at.append = 0;
        const before = this.inserted.length;
        try {
          outcomes.push({ ok: savepoints ? this.savepoint(appends) : this.checkThenInsert(appends) });
        } catch (err) {
          if (err === NEEDS_SAVEPOINTS) throw err;
          this.inserted.length = before;
          outcomes.push({ err }); // nothing of it stored (or its savepoint rolled back); the others stand
        }
      }
    });
    // Committed: what it stored is now the head of its streams (a refused command stored nothing).
    if (this.heads.size + this.inserted.length > MAX_HEADS) this.heads.clear();
    for (const [c, a, , position, , revision] of this.inserted) this.heads.set(group[c]![a]!.streamId, { revision, position });
    return { outcomes, inserted: this.inserted };
  }

  /** The stream's last revision and position: from memory, else (and for streams this transaction wrote) from the file. */
  private streamHead(streamId: string): { revision: number; position: number } {
    if (!this.touched.has(streamId)) {
      const known = this.heads.get(streamId);
      if (known) return known;
    }
    const head = this.log.head(streamId);
    if (!this.touched.has(streamId)) this.heads.set(streamId, head);
    return head;
  }

  /** Every check first (a refusal throws before anything is written), then every insert. */
  private checkThenInsert(appends: PreparedAppend[]): AppendResult[] {
    if (appends.length === 1) {
      const planned = this.plan(appends[0]!);
      return [this.insertOrRedo(planned)];
    }
    const streams = new Set<string>();
    for (const a of appends) streams.add(a.streamId);
    if (streams.size < appends.length) throw NEEDS_SAVEPOINTS;
    const planned = appends.map((a) => this.plan(a));
    return planned.map((p, i) => {
      this.at.append = i;
      return this.insertOrRedo(p);
    });
  }

  private insertOrRedo(p: Planned): AppendResult {
    try {
      return this.insert(p);
    } catch {
      throw NEEDS_SAVEPOINTS;
    }
  }

  /** Reads the stream's head and checks the append against it; writes nothing. */
  private plan({ streamId, events, expectedRevision, time }: PreparedAppend): Planned {
    const { revision, position } = this.streamHead(streamId);
    // Idempotent retry: events whose ids are already stored (in this stream) are skipped.
    const fresh: number[] = [];
    for (let i = 0; i < events.length; i++) {
      const id = events[i]!.id;
      if (id !== null) {
        const found = this.log.streamOfId(id);
        if (found !== undefined) {
          if (found !== streamId) throw new Error(`event id ${id} already used in stream ${found}`);
          continue;
        }
      }
      fresh.push(i);
    }
    if (fresh.length === 0 && events.length > 0) return { streamId, time, fresh, events, revision, position };
    if (!matchesExpected(expectedRevision, revision)) throw new WrongExpectedRevisionError(streamId, expectedRevision, revision);
    return { streamId, time, fresh, events, revision, position };
  }

  private insert({ streamId, time, fresh, events, revision, position }: Planned): AppendResult {
    if (fresh.length === 0) return { nextExpectedRevision: revision, position };
    this.touched.add(streamId);
    let first = 0;
    for (const i of fresh) {
      const e = events[i]!;
      revision += 1;
      const id = e.id ?? timeOrderedId(time);
      position = this.log.insert(id, e.id !== null, streamId, revision, e.type, e.data, e.metadata, time, position);
      if (first === 0) first = position;
      this.inserted.push([this.at.command, this.at.append, i, position, id, revision]);
    }
    this.log.setHead(streamId, revision, position, first);
    return { nextExpectedRevision: revision, position };
  }
}

/** A stream's append as the writer stores it: JSON made here, on the caller's thread, with the command's time. */
export function prepare({ streamId, events, expectedRevision }: StreamAppend, time: number): PreparedAppend {
  return {
    streamId,
    expectedRevision,
    time,
    events: events.map((e) => ({
      id: e.id ?? null,
      type: e.type,
      data: JSON.stringify(e.data ?? null),
      metadata: e.metadata ? JSON.stringify(e.metadata) : '{}',
    })),
  };
}
