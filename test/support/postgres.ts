/**
 * The PostgreSQL the tests use (127.0.0.1:5432, trust auth, user postgres; PG_TEST_URL overrides):
 * each store gets a schema (or a database) of its own, dropped afterwards. Without a server the
 * suites are skipped with a notice, unless REQUIRE_POSTGRES=true (CI), where they fail instead.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export const PG_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Whether a PostgreSQL answers at PG_URL within about 2 s. */
export async function postgresAnswers(): Promise<boolean> {
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
  if (await postgresAnswers()) return true;
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

/**
 * The e2e servers' databases, reused within a run: a server that stops for good hands its database
 * back emptied (its schemas dropped, its sessions ended) to the free list `ct_e2e_free` (in the
 * server's `postgres` database, made by postgres-global.ts), and the next server claims it, where a
 * CREATE DATABASE copies template1 and a DROP DATABASE waits for a checkpoint, about a second each.
 * Named `<runPrefix>...`: only this run claims them, and its teardown drops them all.
 */
export const FREE_LIST = 'ct_e2e_free';

export async function claimDatabase(runPrefix: string): Promise<{ name: string; url: string }> {
  // Without the free list (a run without postgres-global.ts), a new database.
  const reused = await onServer(async (c) => {
    const r = await c.query<{ name: string }>(
      `DELETE FROM ${FREE_LIST} WHERE name = (SELECT name FROM ${FREE_LIST} WHERE starts_with(name, $1) LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING name`,
      [runPrefix],
    );
    return r.rows[0]?.name ?? null;
  }).catch(() => null);
  if (!reused) return createDatabase(runPrefix.replace(/_$/, ''));
  const url = new URL(PG_URL);
  url.pathname = `/${reused}`;
  return { name: reused, url: url.toString() };
}

/** Empties a claimed database (as DROP DATABASE .. WITH (FORCE) would, sessions first) and frees it. */
export async function releaseDatabase(db: { name: string; url: string }): Promise<void> {
  await onServer(async (c) => {
    await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]);
    const r = await c.query<{ nspname: string }>(
      `SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('public', 'information_schema') AND nspname NOT LIKE 'pg\\_%'`,
    );
    for (const { nspname } of r.rows) await c.query(`DROP SCHEMA ${pg.escapeIdentifier(nspname)} CASCADE`);
  }, db.url);
  await onServer((c) => c.query(`INSERT INTO ${FREE_LIST} (name) VALUES ($1) ON CONFLICT DO NOTHING`, [db.name])).catch(() => dropDatabase(db.name));
}
