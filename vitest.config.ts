import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real-server suites: `npm run test:engines` (vitest.engines.config.ts).
    exclude: ['**/node_modules/**', 'test/engines/**'],
    // Asks once whether Redis answers: the BullMQ suites skip (or, with REQUIRE_REDIS=true, the run fails) at once.
    globalSetup: ['test/support/redis-global.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
