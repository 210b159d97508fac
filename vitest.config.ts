import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real-server suites: `npm run test:engines` (vitest.engines.config.ts).
    exclude: ['**/node_modules/**', 'test/engines/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
