/**
 * vitest globalSetup: with E2E_ENGINES=postgres, drops at the end of the run every database this run's
 * servers made (named `ct_e2e_<this process's pid>_...`, test/support/engines.ts): a server a test
 * leaves running, or one restarted on a kept DATA_DIR, never drops its own.
 */
import pg from 'pg';

export const RUN_PREFIX = (pid: number) => `ct_e2e_${pid}_`;

export default function setup() {
  return async () => {
    if (process.env.E2E_ENGINES?.trim() !== 'postgres') return;
    const client = new pg.Client({ connectionString: process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
    client.on('error', () => {});
    try {
      await client.connect();
      const r = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [RUN_PREFIX(process.pid)]);
      for (const { datname } of r.rows) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    } catch {
      // Nothing to drop when no server answers.
    } finally {
      await client.end().catch(() => {});
    }
  };
}
