import { defineConfig } from 'vitest/config';

/**
 * Tests that claim a latency from the contract ("within a second": the wallboard, the dialer at a
 * calling-hours opening) run after the rest, one file at a time, so the run's own load does not
 * decide them.
 */
const LATENCY = ['test/browser/**/*.test.ts', 'test/e2e/compliance.test.ts'];

export default defineConfig({
  test: {
    // Real-server suites: `npm run test:engines` (vitest.engines.config.ts).
    exclude: ['**/node_modules/**', 'test/engines/**'],
    // Asks once whether Redis answers: the BullMQ suites skip (or, with REQUIRE_REDIS=true, the run fails) at once.
    globalSetup: ['test/support/redis-global.ts', 'test/support/postgres-global.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'suite', sequence: { groupOrder: 0 }, include: ['test/**/*.test.ts'], exclude: ['**/node_modules/**', 'test/engines/**', ...LATENCY] } },
      { extends: true, test: { name: 'latency', include: LATENCY, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
