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
  const env: TestWorkflowEnvironment = await attach.call(TestWorkflowEnvironment, { server: { type: 'existing' }, address, namespace: 'default', supportsTimeSkipping: true });
  // An earlier file on this server may have left time locked (see releaseLeakedTimeLocks).
  const released = await releaseLeakedTimeLocks(env);
  if (released > 0) console.warn(`test server ${address}: released ${released} time-skipping lock(s) an earlier file left`);
  return env;
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
 * The Java test server keeps time skipping locked for a workflow task or activity
 * that no worker will ever finish: one of a workflow terminated in the middle of
 * it, or one scheduled after the file's worker stopped (a dispatcher woken by the
 * API just before a file's teardown, say). The lock outlives the file, and the next
 * file on that server then waits in real time wherever it means to skip time (CI
 * once failed that way: test/transactions.test.ts's concurrent payments and
 * cancels leave about ten). So a file releases them when it ends and again when it
 * starts (createTimeSkippingEnv): with nothing of its own running, an hour of
 * skipped time must pass at once; while it does not, one leaked lock is released.
 * A slow answer is told from a lock by the server's clock (it moved the hour, or
 * only real time), so the lock the server keeps for its clients is never released.
 */
export async function releaseLeakedTimeLocks(env: TestWorkflowEnvironment, { attempts = 100, probeMs = 1_000, budgetMs = 30_000 } = {}): Promise<number> {
  const testService = (env.connection as unknown as { testService?: { unlockTimeSkipping(request: object): Promise<unknown> } }).testService;
  if (!testService) return 0;
  const hour = 3_600_000;
  const started = Date.now();
  let released = 0;
  // Bounded in time too: a file whose teardown keeps finding locks (test-clocks-more once spent the
  // whole 180 s hook on it) leaves the rest to the next file's start, which tries again.
  // Every answer awaited here is bounded: a teardown must end even when the server stops answering.
  const within = <T,>(promise: Promise<T>, ms: number, otherwise: T) => Promise.race([promise, new Promise<T>((resolve) => setTimeout(() => resolve(otherwise), ms))]);
  for (; released < attempts && Date.now() - started < budgetMs; released++) {
    const from = await within(env.currentTimeMs(), 5_000, Number.NaN);
    if (Number.isNaN(from)) break;
    const sleeping = env.sleep(hour);
    const skipped = await within(sleeping.then(() => true), probeMs, false);
    if (skipped) break;
    // The hour passed, the answer is only slow: nothing is locked (and its answer is not awaited:
    // under load it once never came, and test-clocks-more's teardown hung on it for the whole hook).
    const now = await within(env.currentTimeMs(), 5_000, Number.NaN);
    if (Number.isNaN(now) || now >= from + hour) break;
    if (!(await within(testService.unlockTimeSkipping({}).then(() => true, () => false), 5_000, false))) break;
  }
  return released;
}
