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

/**
 * How long a query on a request's path (a command's reads and append, a read model's lookup) and a
 * new connection may wait for the server: past it the server counts as unreachable and the request
 * answers 503. Without it a host cut off from the database (packets dropped, no reset) waited for
 * TCP's own timeouts, minutes. Bulk reads (catch-up, exports) set no deadline.
 */
export const ANSWER_MS = 800;

/**
 * An append's deadline: a group commit of many events may take seconds on a busy server, and a
 * request reaches its append only after its reads answered within ANSWER_MS; this one only keeps a
 * link lost in between from hanging the request for minutes.
 */
export const APPEND_MS = 10_000;

/** `query` with a deadline (pg's own query_timeout, missing from its types). */
export const timed = <Q extends pg.QueryConfig>(query: Q, ms = ANSWER_MS): Q => Object.assign(query, { query_timeout: ms });

const message = (err: unknown) => String((err as { message?: unknown } | null)?.message ?? '');

/** Whether `err` says the server did not answer within its deadline (query, connect, a free connection). */
export const isTimeout = (err: unknown) => /^(Query read timeout|Connection terminated due to connection timeout|timeout exceeded when trying to connect|timeout expired)/.test(message(err));

const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE']);

/** Whether `err` says the server did not answer in time, cannot be reached or the connection broke: 503, not 500. */
export const isUnreachable = (err: unknown) =>
  isTimeout(err) || /^Connection terminated/.test(message(err)) || NETWORK.has(String((err as { code?: unknown } | null)?.code));

/**
 * A client that, ended with a query still unanswered (its deadline passed), resets its connection:
 * a graceful close would leave the query in the kernel's send buffer, delivered and run once the
 * link is back, after the request was answered 503 with "nothing was done".
 */
class ResettingClient extends pg.Client {
  constructor(config: pg.ClientConfig = {}) {
    super({ ...config, connectionTimeoutMillis: ANSWER_MS });
  }

  override end(): Promise<void>;
  override end(callback: (err: Error) => void): void;
  override end(callback?: (err: Error) => void): Promise<void> | void {
    const inner = this as unknown as { _activeQuery: unknown; connection?: { stream?: { resetAndDestroy?: () => void } } };
    if (inner._activeQuery) inner.connection?.stream?.resetAndDestroy?.();
    return callback ? super.end(callback) : super.end();
  }
}

/** A pool on `url`; its connections' errors (a server restart) are the queries' to report, not the process's. */
export function openPool(url: string, max: number, settings: Record<string, string> = {}): pg.Pool {
  // No JIT: the planner's guess of 100 rows per JSON function call made the append's small plans look
  // costly enough to compile, ~45 ms a call for nothing.
  const options = Object.entries({ jit: 'off', ...settings }).map(([k, v]) => `-c ${k}=${v}`).join(' ') || undefined;
  // connectionTimeoutMillis bounds the wait for a free connection; ResettingClient the connect itself.
  const pool = new pg.Pool({ connectionString: url, max, types, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000, options, Client: ResettingClient });
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
