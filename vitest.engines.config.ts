import { defineConfig } from 'vitest/config';

/**
 * `npm run test:engines`: the port contract suites against real servers named by EVENTSTORE_URL /
 * MONGODB_URL (each suite is skipped when its URL is unset). `npm test` never runs these files.
 */
export default defineConfig({
  test: {
    include: ['test/engines/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
