/**
 * How the embedded log's file keeps streams.
 *
 * `chained` (files made by this version on): each event row holds `prev`, the position of its
 * stream's previous event, and a `streams` table holds each stream's head (last revision and
 * position) and its first event's position. A commit writes its event rows, which sit together at
 * the end of the table, and one head row per stream it touched, which sit together in a small table
 * for hot streams. A stream is read by walking back from its head: a read from a revision costs the
 * events after it, which the aggregate cache and snapshots keep short (at most SNAPSHOT_EVERY plus
 * what arrived since).
 *
 * Event ids (files made from this version on): only the ids callers gave (`given`, for idempotent
 * retries) are in a unique index; ids the log made (time-ordered, unique by construction) are not
 * indexed. Indexing every id cost ~0.8 µs of an event's ~4.4 µs in a loop of grouped commits (the
 * index's btree insert and its page in each commit's WAL frames). Such a file does not notice a caller
 * giving an id the log made for another event; ids a caller gives are checked as before. Files made
 * before index every id (`ids: 'all'`) and keep doing so.
 *
 * `indexed` (files made before): a UNIQUE (stream_id, revision) index on the events. Each event's
 * entry lands in its stream's own leaf page of that index, so a commit of 30 commands on 30 agents
 * wrote 30 index pages to the WAL (and later to the file): measured, 14 µs an event against 7 µs
 * chained. Such files keep working as they are (no rewrite of the log at start).
 */
import type Database from 'better-sqlite3';
import type { RecordedEvent } from './port.js';

export type Layout = 'chained' | 'indexed';

// No AUTOINCREMENT: no event is ever deleted, so SQLite's next rowid (the largest plus one) never
// reuses a position, and an insert skips the sqlite_sequence update (~0.4 µs an event, measured).
const CHAINED_SCHEMA = `
  CREATE TABLE events (
    position INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    stream_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    metadata TEXT NOT NULL,
    time INTEGER NOT NULL,
    prev INTEGER,
    given INTEGER
  );
  CREATE UNIQUE INDEX events_given_id ON events (id) WHERE given = 1;
  CREATE TABLE streams (
    stream_id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    position INTEGER NOT NULL,
    first INTEGER NOT NULL
  ) WITHOUT ROWID;
`;

/** The layout of the file's log, made `chained` when the file has none yet. */
export function openLayout(db: Database.Database): Layout {
  const create = db.transaction(() => {
    // Inside the write lock: two processes opening a new file make it once.
    if (!hasEvents(db)) db.exec(CHAINED_SCHEMA);
  });
  if (!hasEvents(db)) create.immediate();
  return layoutOf(db);
}

/** The layout of an existing log (a connection that did not make it: a writer thread, a tool). */
export function layoutOf(db: Database.Database): Layout {
  return eventColumns(db).has('prev') ? 'chained' : 'indexed';
}

/** The columns of the file's `events` table, which tell its layout and its id index. */
function eventColumns(db: Database.Database): Set<string> {
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(events)').all();
  if (columns.length === 0) throw new Error('the file holds no event log');
  return new Set(columns.map((c) => c.name));
}

const hasEvents = (db: Database.Database) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'").get() !== undefined;

/** A stream's head: its last revision and position (-1 and 0: no stream). */
export interface Head {
  revision: number;
  position: number;
}

/** Which event ids the file's unique index holds: every one, or those callers gave (see above). */
export type IdIndex = 'all' | 'given';

export function idIndexOf(db: Database.Database): IdIndex {
  return eventColumns(db).has('given') ? 'given' : 'all';
}

/**
 * The writes of an append in either layout: `insert` an event after the head it was checked
 * against, then (chained) `setHead` once per stream and append. Prepared once per connection.
 */
export class LogWrites {
  private readonly insertStmt: Database.Statement;
  private readonly headStmt: Database.Statement<[string], Head>;
  private readonly setHeadStmt: Database.Statement | null;
  private readonly byIdStmt: Database.Statement<[string], { stream_id: string }>;
  readonly ids: IdIndex;

  constructor(
    db: Database.Database,
    readonly layout: Layout = layoutOf(db),
  ) {
    this.headStmt = db.prepare(streamHeadSql(layout));
    this.ids = idIndexOf(db);
    // `given = 1` as in the partial index's WHERE, so SQLite answers from that index.
    this.byIdStmt = db.prepare(this.ids === 'given' ? 'SELECT stream_id FROM events WHERE id = ? AND given = 1' : 'SELECT stream_id FROM events WHERE id = ?');
    if (layout === 'chained') {
      this.insertStmt = db.prepare(
        this.ids === 'given'
          ? 'INSERT INTO events (id, stream_id, revision, type, data, metadata, time, prev, given) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'
          : 'INSERT INTO events (id, stream_id, revision, type, data, metadata, time, prev) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
      // `first` is set when the stream's row is made and never changes.
      this.setHeadStmt = db.prepare(
        'INSERT INTO streams (stream_id, revision, position, first) VALUES (?, ?, ?, ?) ON CONFLICT (stream_id) DO UPDATE SET revision = excluded.revision, position = excluded.position',
      );
    } else {
      this.insertStmt = db.prepare('INSERT INTO events (id, stream_id, revision, type, data, metadata, time) VALUES (?, ?, ?, ?, ?, ?, ?)');
      this.setHeadStmt = null;
    }
  }

  /** The stream holding the event with this id, among the ids the file indexes (see IdIndex). */
  streamOfId(id: string): string | undefined {
    return this.byIdStmt.get(id)?.stream_id;
  }

  /** The stream's head as the file holds it (this connection's transaction included). */
  head(streamId: string): Head {
    const h = this.headStmt.get(streamId);
    return h ? { revision: h.revision, position: h.position } : { revision: -1, position: 0 };
  }

  /**
   * Inserts one event after `prevPosition` (its stream's previous event; 0: none); answers its
   * position. `given`: the caller gave the id (an idempotent retry must find it), not the log.
   */
  insert(id: string, given: boolean, streamId: string, revision: number, type: string, data: string, metadata: string, time: number, prevPosition: number): number {
    const prev = prevPosition === 0 ? null : prevPosition;
    const r =
      this.ids === 'given'
        ? this.insertStmt.run(id, streamId, revision, type, data, metadata, time, prev, given ? 1 : null)
        : this.setHeadStmt === null
          ? this.insertStmt.run(id, streamId, revision, type, data, metadata, time)
          : this.insertStmt.run(id, streamId, revision, type, data, metadata, time, prev);
    return Number(r.lastInsertRowid);
  }

  /** After an append's inserts: the stream's new head (`first`: the position of its first event, used if the stream is new). */
  setHead(streamId: string, revision: number, position: number, first: number): void {
    this.setHeadStmt?.run(streamId, revision, position, first);
  }
}

/** The statement reading a stream's head (`revision`, `position`; no row: no stream), its one parameter the stream id. */
export function streamHeadSql(layout: Layout): string {
  return layout === 'chained'
    ? 'SELECT revision, position FROM streams WHERE stream_id = ?'
    : 'SELECT revision, position FROM events WHERE stream_id = ? ORDER BY revision DESC LIMIT 1';
}

/**
 * The statement reading a stream (the row columns of `events`) in revision order, named parameters
 * `stream`, `from` (revision), `below` (position) and `limit` (-1: all).
 */
export function readStreamSql(layout: Layout): string {
  if (layout === 'indexed') return 'SELECT * FROM events WHERE stream_id = @stream AND revision >= @from AND position < @below ORDER BY revision LIMIT @limit';
  // Back from the head until the revision asked for, then forward in revision order.
  return `WITH RECURSIVE chain(position, revision, prev) AS (
      SELECT e.position, e.revision, e.prev FROM streams s JOIN events e ON e.position = s.position WHERE s.stream_id = @stream
      UNION ALL
      SELECT e.position, e.revision, e.prev FROM chain c JOIN events e ON e.position = c.prev WHERE c.revision > @from
    )
    SELECT e.position, e.id, e.stream_id, e.revision, e.type, e.data, e.metadata, e.time FROM chain c JOIN events e ON e.position = c.position
    WHERE c.revision >= @from AND c.position < @below ORDER BY c.revision LIMIT @limit`;
}

/** A stream's first event (chained files keep its position), named parameters `stream` and `below`; null where the layout keeps none. */
export function firstEventSql(layout: Layout): string | null {
  if (layout === 'indexed') return null;
  return 'SELECT e.position, e.id, e.stream_id, e.revision, e.type, e.data, e.metadata, e.time FROM streams s JOIN events e ON e.position = s.first WHERE s.stream_id = @stream AND e.position < @below';
}

/** An event's row as the readers select it. */
export interface Row {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: string;
  metadata: string;
  time: number;
}

export const toRecorded = (r: Row): RecordedEvent => ({
  position: r.position,
  id: r.id,
  streamId: r.stream_id,
  revision: r.revision,
  type: r.type,
  data: JSON.parse(r.data),
  metadata: JSON.parse(r.metadata),
  time: r.time,
});
