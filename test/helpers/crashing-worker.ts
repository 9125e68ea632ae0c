import { spawn } from 'node:child_process';
import { once } from 'node:events';

import { inject, onTestFinished } from 'vitest';

import type { TestEngine } from './engine.ts';
import { eventually } from './temporal.ts';

/**
 * Starts one of the crash tests' worker processes (test/fixtures/*-worker.ts)
 * against the test engine's database, Temporal server and task queue, and waits
 * for it to say `ready`. The fixture kills itself with SIGKILL at its chosen
 * moment; `exited` resolves then, with [code, signal]. Called inside a test: when
 * the test ends (a failed one too) a worker still alive is killed, as a process
 * left running keeps the test run from ending.
 */
export async function startCrashingWorker(engine: TestEngine, fixture: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [`test/fixtures/${fixture}`], {
    env: {
      ...process.env,
      DATABASE_URL: engine.db.url,
      TEMPORAL_ADDRESS: engine.env.address,
      TASK_QUEUE: engine.taskQueue,
      WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  await eventually(
    async () => output,
    (o) => o.includes('ready'),
    30_000,
  );
  return { child, exited, output: () => output };
}
