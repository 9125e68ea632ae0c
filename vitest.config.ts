import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/global-setup.ts'],
    pool: 'forks',
    // Two cores: two test files at a time, each with its own test server and database.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
  },
});
