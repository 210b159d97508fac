/**
 * The platform's read store writes on a thread of their own (sqlite-thread.ts): the projector's
 * commits (about a sixteenth of the platform thread's time per durable command when run on it),
 * and the few direct writes, in the order they were made. Reads stay on the platform thread's own
 * connection, which sees each write once its promise resolves.
 */
import { openSqlite } from '../sqlite.js';
import { SqliteThread, pack, serveOnThread, unpack } from '../sqlite-thread.js';
import { ReadStoreWrites, type RowWrite } from './sqlite-writes.js';

const TASK = 'read-store-writer';

/** This module: what the writer thread loads (compiled). */
export const readWriterModule = new URL(import.meta.url);

const num = (s: string | null) => (s === null ? null : Number(s));

/** The platform thread's side: each call resolves once its write is committed. */
export class ReadWriterThread {
  private readonly thread: SqliteThread;

  constructor(file: string, module: URL = readWriterModule) {
    this.thread = new SqliteThread('read store writer', module, TASK, { file });
  }

  async commit(writes: RowWrite[], checkpoints: string, now: number, purge: boolean): Promise<void> {
    const fields: (string | number | null)[] = ['c', now, purge ? 1 : 0, checkpoints];
    for (const w of writes) fields.push(w.collection, w.id, w.data, w.position);
    await this.thread.request(pack(fields));
  }

  async put(collection: string, id: string, data: string, expiresAt: number | null): Promise<void> {
    await this.thread.request(pack(['p', collection, id, data, expiresAt]));
  }

  async insertIfAbsent(collection: string, id: string, data: string, expiresAt: number | null, now: number): Promise<boolean> {
    return (await this.thread.request(pack(['i', collection, id, data, expiresAt, now]))) === '1';
  }

  async delete(collection: string, id: string): Promise<void> {
    await this.thread.request(pack(['d', collection, id]));
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}

serveOnThread<{ file: string }>(TASK, ({ file }) => {
  // NORMAL, as on the platform thread: documents and checkpoints commit together, and the log can replay them.
  const db = openSqlite(file, 'NORMAL');
  const writes = new ReadStoreWrites(db);
  return {
    handle(text) {
      const f = unpack(text);
      switch (f[0]) {
        case 'c': {
          const now = Number(f[1]);
          const rows: RowWrite[] = [];
          for (let i = 4; i < f.length; i += 4) rows.push({ collection: f[i]!, id: f[i + 1]!, data: f[i + 2] ?? null, position: num(f[i + 3] ?? null) });
          writes.commit(rows, f[3]!, now);
          if (f[2] === '1') writes.purge(now);
          return '';
        }
        case 'p':
          writes.put(f[1]!, f[2]!, f[3]!, num(f[4] ?? null));
          return '';
        case 'i':
          return writes.insertIfAbsent(f[1]!, f[2]!, f[3]!, num(f[4] ?? null), Number(f[5])) ? '1' : '0';
        case 'd':
          writes.delete(f[1]!, f[2]!);
          return '';
        default:
          throw new Error(`read store writer: unknown request ${String(f[0])}`);
      }
    },
    close: () => {
      db.close();
    },
  };
});
