/**
 * BENCH_DATABASE_URL: the http, calls and webhooks suites again on PostgreSQL (DATABASE_URL), each run
 * on a database of its own made from that server's URL and dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Runs `run` with the URL of a fresh database on the server at `serverUrl`; drops it after. */
export async function withDatabase<T>(serverUrl: string, run: (url: string) => Promise<T>): Promise<T> {
  const name = `ct_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await admin(serverUrl, `CREATE DATABASE ${name}`);
  try {
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return await run(url.toString());
  } finally {
    await admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}
