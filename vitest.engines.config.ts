import { defineConfig } from 'vitest/config';

/**
 * `npm run test:engines`: the port contract suites against real servers named by EVENTSTORE_URL /
 * MONGODB_URL (each suite is skipped when its URL is unset; `npm test` never runs these files), and
 * the PostgreSQL suites on the server at PG_TEST_URL (default 127.0.0.1:5432), which `npm test` runs too.
 */
export default defineConfig({
  test: {
    include: ['test/engines/**/*.test.ts', 'test/gateways/*.postgres.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
