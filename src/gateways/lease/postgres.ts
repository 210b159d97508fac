/**
 * The lease in PostgreSQL (DATABASE_URL), for deployments whose processes share no DATA_DIR: a row
 * per lease naming its holder (a random id per process) and when it runs out, on the server's clock
 * (`clock_timestamp()`), so the hosts' clocks never decide who holds it. Taking it is one upsert that
 * changes the row only when it is free, expired or already ours; renewing and releasing match the
 * holder. Every takeover by a new holder adds one to `token`, the fencing token a holder can pass to
 * what it writes (`token` after a successful tryAcquire).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Lease } from './port.js';
import { migrate, openPool, schemaName, type PgOptions } from '../postgres.js';

export class PostgresLease implements Lease {
  readonly holder = randomUUID();
  /** The lease's fencing token as of this holder's last successful tryAcquire (null: never held). */
  token: number | null = null;
  private readonly schema: string;
  private ready: Promise<void> | null = null;
  private readonly pool: pg.Pool;

  constructor(
    url: string,
    private readonly name: string,
    private readonly ttlMs: number,
    options: PgOptions = {},
  ) {
    this.schema = schemaName(options.schema);
    // One connection: the lease is a few statements a second at most.
    this.pool = openPool(url, 1);
  }

  private up(): Promise<void> {
    this.ready ??= migrate(
      this.pool,
      this.schema,
      `CREATE TABLE IF NOT EXISTS ${this.schema}.leases (name text PRIMARY KEY, holder text NOT NULL, expires_at timestamptz NOT NULL, token bigint NOT NULL DEFAULT 1)`,
    ).catch((err: unknown) => {
      this.ready = null;
      throw err;
    });
    return this.ready;
  }

  async tryAcquire(): Promise<boolean> {
    await this.up();
    const r = await this.pool.query<{ token: string }>(
      `INSERT INTO ${this.schema}.leases AS l (name, holder, expires_at) VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
         token = CASE WHEN l.holder = excluded.holder THEN l.token ELSE l.token + 1 END
       WHERE l.holder = excluded.holder OR l.expires_at <= clock_timestamp()
       RETURNING token`,
      [this.name, this.holder, this.ttlMs],
    );
    if (r.rows.length === 0) return false;
    // bigint comes back as a string (pg keeps 64-bit integers exact); tokens stay far below 2^53.
    this.token = Number(r.rows[0]!.token);
    return true;
  }

  async renew(): Promise<boolean> {
    await this.up();
    const r = await this.pool.query(
      `UPDATE ${this.schema}.leases SET expires_at = clock_timestamp() + $3 * interval '1 millisecond' WHERE name = $1 AND holder = $2 AND expires_at > clock_timestamp()`,
      [this.name, this.holder, this.ttlMs],
    );
    return r.rowCount === 1;
  }

  async release(): Promise<void> {
    this.token = null;
    await this.up();
    // Expired at once rather than deleted: the token keeps counting across holders.
    await this.pool
      .query(`UPDATE ${this.schema}.leases SET expires_at = '-infinity' WHERE name = $1 AND holder = $2`, [this.name, this.holder])
      .catch(() => {});
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
