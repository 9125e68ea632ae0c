import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/setup/global-setup.ts'],
    pool: 'forks',
    // Two cores: two test files at a time, each with its own test server and database.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: isolatedFiles(),
          // A worker process runs many test files one after another instead of a fresh process per file: the
          // engine's modules (Temporal, MikroORM, Hono) are imported once per worker, not once per file (about a
          // fifth of the suite's time went to those imports). Every file still makes its own engine and database.
          isolate: false,
        },
      },
      {
        extends: true,
        test: { name: 'isolated', include: isolatedFiles(), isolate: true },
      },
    ],
  },
});

/**
 * Files that need a process of their own: test/metrics.test.ts installs the Temporal SDK's runtime with
 * Prometheus telemetry, which a process can do only once and before any worker was made.
 */
function isolatedFiles(): string[] {
  return ['test/metrics.test.ts'];
}
