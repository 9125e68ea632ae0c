import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';

/**
 * A time-skipping environment on this worker's own test server (started by the
 * global setup). The SDK has no public way to attach time skipping to a server
 * it did not start, so this calls its private `create` with the same options
 * `createTimeSkipping` passes; test/infrastructure.test.ts fails if an SDK
 * upgrade breaks that. With no server of ours, the SDK downloads and starts one.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const addresses = inject('testServerAddresses');
  if (addresses.length === 0) return TestWorkflowEnvironment.createTimeSkipping(); // the SDK's download
  const poolId = Number(process.env.VITEST_POOL_ID ?? 1);
  const address = addresses[(poolId - 1) % addresses.length];
  const attach = (TestWorkflowEnvironment as unknown as { create(options: object): Promise<TestWorkflowEnvironment> }).create;
  return attach.call(TestWorkflowEnvironment, { server: { type: 'existing' }, address, namespace: 'default', supportsTimeSkipping: true });
}

/** Polls `probe` until it returns a value that `done` accepts; for state that activities write after a timer fires. */
export async function eventually<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The Java test server keeps time skipping locked for a workflow task that no
 * worker ever polled, even after the workflow is terminated (a dispatcher woken by
 * the API just before a file's teardown, say), and the next file on that server
 * then waits in real time. A file's teardown calls this last: with nothing left
 * running, an hour of skipped time must pass at once; while it does not, one
 * leaked lock is released.
 */
export async function releaseLeakedTimeLocks(env: TestWorkflowEnvironment): Promise<number> {
  const testService = (env.connection as unknown as { testService?: { unlockTimeSkipping(request: object): Promise<unknown> } }).testService;
  if (!testService) return 0;
  let released = 0;
  for (; released < 10; released++) {
    const skipped = await Promise.race([env.sleep(3_600_000).then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3_000))]);
    if (skipped) break;
    await testService.unlockTimeSkipping({});
  }
  return released;
}
