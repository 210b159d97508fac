/**
 * The PostgreSQL the tests use (127.0.0.1:5432, trust auth, user postgres; PG_TEST_URL overrides):
 * each store gets a schema (or a database) of its own, dropped afterwards. Without a server the
 * suites are skipped with a notice, unless REQUIRE_POSTGRES=true (CI), where they fail instead.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export const PG_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function answers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Whether the suites run: true when the server answers; throws when it must and does not. */
export async function postgresAvailable(): Promise<boolean> {
  if (await answers()) return true;
  if (process.env.REQUIRE_POSTGRES === 'true') throw new Error(`no PostgreSQL answers at ${PG_URL} (REQUIRE_POSTGRES=true)`);
  console.warn(`PostgreSQL suites skipped: nothing answers at ${PG_URL}`);
  return false;
}

/** A new schema name, unique across parallel test processes. */
export const freshSchema = () => `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;

/** Runs SQL on a connection of its own. */
export async function onServer<T>(run: (client: pg.Client) => Promise<T>, url = PG_URL): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export const dropSchemas = (schemas: Iterable<string>) =>
  onServer(async (c) => {
    for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  });

/** A fresh database (e2e servers, the bench): its URL. */
export async function createDatabase(prefix = 'ct_test'): Promise<{ name: string; url: string }> {
  const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await onServer((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

export const dropDatabase = (name: string) => onServer((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
