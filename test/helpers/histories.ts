/**
 * dev/histories.ts from the tests: recording a workflow's history into test/histories/ (replayed by
 * test/replay.test.ts), and running the tool as a deploy check would.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { expect } from 'vitest';

export const historiesDir = path.join(import.meta.dirname, '..', 'histories');

/** Runs dev/histories.ts with `args`; the last argument may be extra environment. */
export function histories(...args: (string | Record<string, string>)[]) {
  const env = typeof args.at(-1) === 'object' ? (args.pop() as Record<string, string>) : {};
  return spawnSync(process.execPath, ['dev/histories.ts', ...(args as string[])], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
}

/** Records run `runId` of `workflowId` from the server at `address` as test/histories/<name>.json. */
export function recordHistory(address: string, workflowId: string, runId: string, name: string): void {
  fs.mkdirSync(historiesDir, { recursive: true });
  const recorded = histories('record', address, workflowId, runId, path.join(historiesDir, `${name}.json`));
  expect(recorded.status, recorded.stderr).toBe(0);
}
