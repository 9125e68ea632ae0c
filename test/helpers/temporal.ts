import fs from 'node:fs';
import path from 'node:path';

import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';

import { startTestServer } from '../../dev/test-server.ts';

/**
 * A time-skipping environment on a test server of this file's own, started here and
 * stopped by the environment's teardown. Skipped time is global to a server, so files
 * do not share one: when they did (one per vitest worker), what an earlier file left
 * behind (a workflow whose timer fired during a later file's skipped hour, a task no
 * worker would finish) locked time for the next file, which then waited in real time
 * (CI failed so in test/webhooks.test.ts twice and test-clocks-more once). A JVM
 * server starts in about a second here.
 *
 * The SDK has no public way to attach time skipping to a server it did not start, so
 * this calls its private `create` with the same options `createTimeSkipping` passes;
 * test/infrastructure.test.ts fails if an SDK upgrade breaks that. With no launch
 * of ours (no JVM and downloads allowed), the SDK downloads and starts one.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const launch = inject('testServerLaunch');
  if (!launch) return TestWorkflowEnvironment.createTimeSkipping(); // the SDK's download
  const name = `test-server-${process.pid}-${Date.now()}`;
  const server = await startTestServer(launch, path.join(inject('tmpDir'), `${name}.log`));
  // A file that never reaches its teardown (a killed vitest worker) leaves the JVM running:
  // the global teardown stops every server whose pid file is still there.
  const pidFile = path.join(inject('tmpDir'), `${name}.pid`);
  fs.writeFileSync(pidFile, String(server.pid));
  const stop = async () => {
    await server.stop();
    fs.rmSync(pidFile, { force: true });
  };
  try {
    const attach = (TestWorkflowEnvironment as unknown as { create(options: object): Promise<TestWorkflowEnvironment> })
      .create;
    const env: TestWorkflowEnvironment = await attach.call(TestWorkflowEnvironment, {
      server: { type: 'existing' },
      address: server.address,
      namespace: 'default',
      supportsTimeSkipping: true,
    });
    const teardown = env.teardown.bind(env);
    env.teardown = async () => {
      try {
        await teardown();
      } finally {
        await stop();
      }
    };
    return env;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Polls `probe` until it returns a value that `done` accepts; for state that activities write after a timer fires. */
export async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
