import { defineConfig } from 'vitest/config';
import { PG_URL, postgresAnswers } from './test/support/postgres.js';

/**
 * Tests that claim a latency from the contract ("within a second": the wallboard, the dialer at a
 * calling-hours opening) run after the rest, one file at a time, so the run's own load does not
 * decide them.
 */
const LATENCY = ['test/browser/**/*.test.ts', 'test/e2e/compliance.test.ts'];

/**
 * End-to-end files that never start a server on the engines E2E_ENGINES names (they run the platform
 * as processes on settings of their own, PostgreSQL included, or no server at all): the same test
 * twice, so the PostgreSQL project leaves them to `suite`.
 */
const ENGINE_FREE = [
  'test/e2e/analytics-thread.test.ts',
  'test/e2e/startup.test.ts',
  'test/e2e/engines-process.test.ts',
  'test/e2e/kurrentdb-process.test.ts',
  'test/e2e/postgres-process.test.ts',
  'test/e2e/roles-processes.test.ts',
  'test/e2e/webhooks-bullmq.test.ts',
];

/**
 * Most files wait on sockets, timers and databases rather than on the CPU: vitest's default on two
 * cores (one file at a time) leaves the machine idle, so three files run at once.
 */
const MAX_WORKERS = Number(process.env.VITEST_MAX_WORKERS ?? 3);

export default defineConfig(async () => {
  // `npm test` also runs the end-to-end suite on PostgreSQL + Redis (project `e2e-postgres`) where a
  // PostgreSQL answers; CI (REQUIRE_POSTGRES=true) never skips it. Not when E2E_ENGINES already
  // points the whole run at other engines (`npm run test:e2e:engines`).
  const ownEngines = Boolean(process.env.E2E_ENGINES?.trim());
  // vitest evaluates this file once per project: one probe and one notice per run.
  const probe = ((globalThis as { ctPostgresProbe?: Promise<boolean> }).ctPostgresProbe ??= postgresAnswers().then((up) => {
    if (!up && !ownEngines && process.env.REQUIRE_POSTGRES !== 'true') process.stderr.write(`\n!! No PostgreSQL answers at ${PG_URL} (PG_TEST_URL): projects e2e-postgres and latency-postgres are SKIPPED.\n\n`);
    return up;
  }));
  const onPostgres = !ownEngines && (process.env.REQUIRE_POSTGRES === 'true' || (await probe));
  const redisUrl = process.env.E2E_REDIS_URL ?? process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';
  const postgresEnv = { E2E_ENGINES: 'postgres', E2E_REDIS_URL: redisUrl };
  return {
    test: {
      // Real-server suites: `npm run test:engines` (vitest.engines.config.ts).
      exclude: ['**/node_modules/**', 'test/engines/**'],
      // Asks once whether Redis answers: the BullMQ suites skip (or, with REQUIRE_REDIS=true, the run fails) at once.
      globalSetup: ['test/support/redis-global.ts', 'test/support/postgres-global.ts', 'test/support/build-global.ts'],
      testTimeout: 30_000,
      hookTimeout: 30_000,
      pool: 'forks',
      maxWorkers: MAX_WORKERS,
      projects: [
        { extends: true, test: { name: 'suite', sequence: { groupOrder: 0 }, include: ['test/**/*.test.ts'], exclude: ['**/node_modules/**', 'test/engines/**', ...LATENCY] } },
        ...(onPostgres
          ? [{ extends: true as const, test: { name: 'e2e-postgres', env: postgresEnv, sequence: { groupOrder: 0 }, include: ['test/e2e/**/*.test.ts'], exclude: ['**/node_modules/**', ...LATENCY, ...ENGINE_FREE] } }]
          : []),
        { extends: true, test: { name: 'latency', include: LATENCY, fileParallelism: false, sequence: { groupOrder: 1 } } },
        ...(onPostgres
          ? [{ extends: true as const, test: { name: 'latency-postgres', env: postgresEnv, include: ['test/e2e/compliance.test.ts'], fileParallelism: false, sequence: { groupOrder: 2 } } }]
          : []),
      ],
    },
  };
});
