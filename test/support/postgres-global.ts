/**
 * vitest globalSetup: makes the free list of the e2e servers' databases (test/support/postgres.ts)
 * and drops at the end of the run every database this run's servers made (named
 * `ct_e2e_<this process's pid>_...`, test/support/engines.ts), free or left by a server a test kept.
 */
import pg from 'pg';
import { dropDatabase, FREE_LIST, PG_URL } from './postgres.js';

export const RUN_PREFIX = (pid: number) => `ct_e2e_${pid}_`;

async function onPostgres(run: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await run(client);
  } catch {
    // Nothing to do when no server answers.
  } finally {
    await client.end().catch(() => {});
  }
}

export default async function setup() {
  await onPostgres(async (c) => {
    // Runs of other worktrees may make it at the same moment: one at a time.
    await c.query('SELECT pg_advisory_lock(4242)');
    await c.query(`CREATE TABLE IF NOT EXISTS ${FREE_LIST} (name text PRIMARY KEY)`);
    await c.query('SELECT pg_advisory_unlock(4242)');
  });
  return async () => {
    const prefix = RUN_PREFIX(process.pid);
    await onPostgres(async (c) => {
      await c.query(`DELETE FROM ${FREE_LIST} WHERE starts_with(name, $1)`, [prefix]);
      const r = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix]);
      // At once: each DROP DATABASE waits for a checkpoint, which drops made together share.
      await Promise.all(r.rows.map(({ datname }) => dropDatabase(datname).catch(() => {})));
    });
  };
}
