/**
 * The embedded lease: a row in `DATA_DIR/lease.db` naming the holder (a random id, its pid and
 * host) and when the lease runs out. Taking and renewing are immediate transactions, so two
 * processes never both hold it. A holder on this host whose pid is gone loses it at once (kill -9
 * is taken over without waiting for the TTL); otherwise it runs out `ttlMs` after the last renewal.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type Database from 'better-sqlite3';
import { openSqlite } from '../sqlite.js';
import type { Lease } from './port.js';

interface Row {
  holder: string;
  pid: number;
  host: string;
  expires_at: number;
  token: number;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class SqliteLease implements Lease {
  private readonly db: Database.Database;
  readonly holder = randomUUID();
  private readonly host = os.hostname();
  token: number | null = null;

  constructor(
    file: string,
    private readonly name: string,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.db = openSqlite(file, 'FULL');
    this.db.exec('CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL, expires_at INTEGER NOT NULL)');
    // The fencing token (a file from before it had one starts at 0). Release keeps the row, so it never goes back.
    const columns = this.db.prepare('PRAGMA table_info(leases)').all() as { name: string }[];
    if (!columns.some((c) => c.name === 'token')) this.db.exec('ALTER TABLE leases ADD COLUMN token INTEGER NOT NULL DEFAULT 0');
  }

  async tryAcquire(): Promise<boolean> {
    const take = this.db.transaction((): boolean => {
      const row = this.db.prepare('SELECT holder, pid, host, expires_at, token FROM leases WHERE name = ?').get(this.name) as Row | undefined;
      const now = this.now();
      // Still ours (nobody took it since, even if it ran out): the same holding, the same token.
      const ours = row?.holder === this.holder;
      const free = !row || ours || row.expires_at <= now || (row.host === this.host && !pidAlive(row.pid));
      if (!free) return false;
      const token = ours ? row.token : (row?.token ?? 0) + 1;
      this.db
        .prepare(
          'INSERT INTO leases (name, holder, pid, host, expires_at, token) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, host = excluded.host, expires_at = excluded.expires_at, token = excluded.token',
        )
        .run(this.name, this.holder, process.pid, this.host, now + this.ttlMs, token);
      this.token = token;
      return true;
    });
    return take.immediate();
  }

  async renew(): Promise<boolean> {
    const r = this.db.prepare('UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ?').run(this.now() + this.ttlMs, this.name, this.holder);
    return r.changes === 1;
  }

  async release(): Promise<void> {
    // The row stays (expired) so the next holding's token follows this one's.
    this.db.prepare("UPDATE leases SET holder = '', expires_at = 0 WHERE name = ? AND holder = ?").run(this.name, this.holder);
    this.token = null;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
