/**
 * What every PostgreSQL adapter shares (DATABASE_URL, on `pg`): a pool whose 64-bit integers come
 * back as numbers, the schema the adapter's tables live in, and creating them once per database.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';

/** int8 (positions, epoch ms) as a JS number: positions stay far below 2^53. */
const INT8 = 20;
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export interface PgOptions {
  /** Schema of the adapter's tables (created when missing); default `telephony`. */
  schema?: string;
  /** Connections the pool opens at most. */
  max?: number;
}

const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

/** The schema name, checked: it is written into SQL as an identifier. */
export function schemaName(schema: string | undefined): string {
  const s = schema ?? 'telephony';
  if (!SCHEMA.test(s)) throw new Error(`bad PostgreSQL schema name ${s}`);
  return s;
}

/** A pool on `url`; its connections' errors (a server restart) are the queries' to report, not the process's. */
export function openPool(url: string, max: number, settings: Record<string, string> = {}): pg.Pool {
  // No JIT: the planner's guess of 100 rows per JSON function call made the append's small plans look
  // costly enough to compile, ~45 ms a call for nothing.
  const options = Object.entries({ jit: 'off', ...settings }).map(([k, v]) => `-c ${k}=${v}`).join(' ') || undefined;
  const pool = new pg.Pool({ connectionString: url, max, types, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000, options });
  pool.on('error', () => {});
  return pool;
}

/** A client outside any pool (LISTEN), with the same integer parsing. */
export function openClient(url: string): pg.Client {
  const client = new pg.Client({ connectionString: url, types });
  client.on('error', () => {});
  return client;
}

/** A stable 63-bit key for an advisory lock named `name` (per schema: schemas never block each other). */
export function lockKey(name: string): string {
  return BigInt.asIntN(64, createHash('sha256').update(name).digest().readBigUInt64BE(0) >> 1n).toString();
}

/**
 * Runs `ddl` (idempotent statements) once the schema exists, under an advisory lock, so processes
 * starting together do not race on CREATE ... IF NOT EXISTS (which is not safe concurrently).
 */
export async function migrate(pool: pg.Pool, schema: string, ddl: string): Promise<void> {
  const client = await pool.connect();
  const key = lockKey(`ct-migrate:${schema}`);
  try {
    await client.query(`SELECT pg_advisory_lock(${key})`);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(ddl);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${key})`);
    }
  } finally {
    client.release();
  }
}

/** PostgreSQL text cannot hold NUL: such characters become U+FFFD in keys and stored JSON. */
export function noNul(s: string): string {
  return s.includes('\0') ? s.replaceAll('\0', '\ufffd') : s;
}

/** JSON text with every `\u0000` escape (not a literal backslash followed by "u0000") as `\ufffd`: jsonb refuses it. */
export function jsonbSafe(json: string): string {
  return json.includes('\\u0000') ? json.replace(/(?<!\\)((?:\\\\)*)\\u0000/g, '$1\\ufffd') : json;
}
