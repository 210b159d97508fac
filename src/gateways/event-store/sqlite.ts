/** Embedded event store: one SQLite file in WAL mode. Writes are synchronous and durable (synchronous=FULL). */
import type Database from 'better-sqlite3';
import { openSqlite } from '../sqlite.js';
import { EventEmitter } from 'node:events';
import { v4 as uuidv4 } from 'uuid';
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
import { pollingSubscription } from './subscription.js';

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

export class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly emitter = new EventEmitter();
  private head = 0;
  private closed = false;
  private readonly stmts;

  /** `file` may be ':memory:' for tests. */
  constructor(file: string, private readonly clock: () => number = Date.now) {
    // FULL: an acknowledged append survives power loss / kill -9.
    this.db = openSqlite(file, 'FULL');
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
      readStream: this.db.prepare<[string, number, number], Row>(
        'SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision LIMIT ?',
      ),
      readAll: this.db.prepare<[number, number], Row>('SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?'),
      head: this.db.prepare<[], { p: number | null }>('SELECT MAX(position) AS p FROM events'),
    };
    this.head = this.stmts.head.get()?.p ?? 0;
  }

  private appendTx = (appends: StreamAppend[]): AppendResult[] =>
    this.db.transaction((batch: StreamAppend[]) => {
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
            e.id ?? uuidv4(),
            streamId,
            revision,
            e.type,
            JSON.stringify(e.data ?? null),
            JSON.stringify(e.metadata ?? {}),
            time,
          );
          position = Number(info.lastInsertRowid);
        }
        results.push({ nextExpectedRevision: revision, position });
      }
      return results;
    })(appends);

  async appendToStream(
    streamId: string,
    events: NewEvent[],
    options: { expectedRevision?: ExpectedRevision } = {},
  ): Promise<AppendResult> {
    const [result] = await this.appendToStreams([{ streamId, events, expectedRevision: options.expectedRevision ?? 'any' }]);
    return result!;
  }

  async appendToStreams(appends: StreamAppend[]): Promise<AppendResult[]> {
    this.assertOpen();
    const results = this.appendTx(appends);
    const newHead = this.stmts.head.get()?.p ?? 0;
    if (newHead > this.head) {
      this.head = newHead;
      this.emitter.emit('appended', newHead);
    }
    return results;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.stmts.readStream.all(streamId, options.fromRevision ?? 0, options.maxCount ?? -1).map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.stmts.readAll.all(options.after ?? 0, options.maxCount ?? -1).map(toRecorded);
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    // Another process may share the file (ROLES split on one host): read the real head.
    this.head = Math.max(this.head, this.stmts.head.get()?.p ?? 0);
    return this.head;
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.emitter.emit('appended', this.head);
    this.db.close();
  }

  private assertOpen() {
    if (this.closed) throw new Error('event store is closed');
  }
}
