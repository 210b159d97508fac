/**
 * Replay's readers of the embedded log (SqliteEventStore.scanRange and scanPages): whole ranges of
 * events in global order, decoded one at a time or handed on as pages (sqlite-pages.ts), reading
 * only what projections use. Apart from the store's appends and reads: they share only the file.
 */
import type Database from 'better-sqlite3';
import type { RecordedEvent } from './port.js';
import { NO_METADATA } from './sqlite-group.js';

/** Only events of the types `only` names (all when null); data only of those `data` names. */
export interface ScanTypes {
  only: readonly string[] | null;
  data: readonly string[];
}

export class LogScanner {
  private readonly stmts;

  constructor(
    private readonly db: Database.Database,
    /** Throws when the store is closed; checked when a scan starts. */
    private readonly assertOpen: () => void,
  ) {
    this.stmts = {
      scan: this.db.prepare<[number, number], [number, string, string, string, number]>(
        'SELECT position, stream_id, type, data, time FROM events WHERE position > ? ORDER BY position LIMIT ?',
      ).raw(),
      // Data only of events of some types (a JSON array), the others' rows only of events of other
      // types: what is left out is skipped inside SQLite, never copied out.
      scanTypes: this.db.prepare<[string, number, string, number], [number, string, string, string | null, number]>(
        `SELECT position, stream_id, type, CASE WHEN type IN (SELECT value FROM json_each(?)) THEN data END, time FROM events
         WHERE position > ? AND type IN (SELECT value FROM json_each(?)) ORDER BY position LIMIT ?`,
      ).raw(),
      scanData: this.db.prepare<[string, number, number], [number, string, string, string | null, number]>(
        `SELECT position, stream_id, type, CASE WHEN type IN (SELECT value FROM json_each(?)) THEN data END, time FROM events
         WHERE position > ? ORDER BY position LIMIT ?`,
      ).raw(),
      // A page of events as one string (sqlite-pages.ts), data only of events of some types (a JSON
      // array, or 'null' for every type); the subquery's order is the aggregate's (the decoder checks it).
      // concat_ws builds a row in one piece (||, a copy per operator, read the log ~15% slower).
      scanPage: this.db.prepare<[{ types: string; after: number; upTo: number; limit: number }], [Buffer | null, number | null]>(
        `SELECT CAST(group_concat(concat_ws(char(31), position, time, type, json_quote(stream_id),
           CASE WHEN @types = 'null' OR type IN (SELECT value FROM json_each(@types)) THEN data ELSE '' END), char(30)) AS BLOB), max(position)
         FROM (SELECT position, time, type, stream_id, data FROM events WHERE position > @after AND position <= @upTo ORDER BY position LIMIT @limit)`,
      ).raw(),
      // scanPage with every event's data: no CASE to evaluate per row (~15% of the read).
      scanPageAll: this.db.prepare<[{ after: number; upTo: number; limit: number }], [Buffer | null, number | null]>(
        `SELECT CAST(group_concat(concat_ws(char(31), position, time, type, json_quote(stream_id), data), char(30)) AS BLOB), max(position)
         FROM (SELECT position, time, type, stream_id, data FROM events WHERE position > @after AND position <= @upTo ORDER BY position LIMIT @limit)`,
      ).raw(),
    };
  }

  /**
   * Replay's reader: events in global order like `readAll`, without what projections never read (id,
   * revision and metadata are left empty), one at a time, each decoded only when reached so it is
   * garbage before the next (a page decoded at once outlives the young generation). With `types`,
   * only events of the types `only` names are read (all when it is null), and only those `data`
   * names come with their data (the others with null).
   */
  *scanRange(after: number, upTo: number, types?: ScanTypes, pageSize = 4096): Generator<RecordedEvent> {
    this.assertOpen();
    const withData = types && JSON.stringify(types.data);
    const only = types && (types.only === null ? null : JSON.stringify(types.only));
    // Rows a page at a time (one statement step per row costs more than the rows), decoded one by one.
    while (after < upTo) {
      const limit = Math.min(pageSize, upTo - after);
      const rows = withData
        ? only
          ? this.stmts.scanTypes.all(withData, after, only, limit)
          : this.stmts.scanData.all(withData, after, limit)
        : this.stmts.scan.all(after, limit);
      if (rows.length === 0) return;
      for (const [position, streamId, type, data, time] of rows) {
        if (position > upTo) return;
        yield { id: '', streamId, revision: 0, position, type, data: data === null ? null : JSON.parse(data), metadata: NO_METADATA, time };
      }
      after = rows[rows.length - 1]![0];
    }
  }

  /**
   * Replay's reader for other threads: the events of `scanRange` as pages (sqlite-pages.ts), each
   * its UTF-8 text in a buffer of its own (transferable to a worker thread), data only of the types
   * `data` names (of all when it is null); decode them with a PageDecoder. SQLite writes a page as one
   * piece: reading the rows one by one cost more (measured).
   */
  *scanPages(after: number, upTo: number, data: readonly string[] | null, pageSize = 4096): Generator<Buffer> {
    this.assertOpen();
    // The text as stored: UTF-8 unless the file was created otherwise (this code never does).
    const encoding = this.db.pragma('encoding', { simple: true });
    if (encoding !== 'UTF-8') throw new Error(`replay reads pages of a UTF-8 event log only (this one is ${String(encoding)})`);
    const types = JSON.stringify(data);
    while (after < upTo) {
      const [page, last] = (data === null ? this.stmts.scanPageAll.get({ after, upTo, limit: pageSize }) : this.stmts.scanPage.get({ types, after, upTo, limit: pageSize }))!;
      if (page === null || last === null) return;
      yield page;
      after = last;
    }
  }
}
