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
