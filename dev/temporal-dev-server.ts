import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { Connection } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';

import { customSearchAttributes } from '../workflows/search-attributes.ts';
import { stopLeftoverFromPidFile, stopPid, waitForPort } from './processes.ts';
import { MissingToolError, resolveTemporalCli, sdkDownloadAllowed, temporalCliHelp } from './tools.ts';

export interface RunningTemporal {
  address: string;
  uiUrl: string | undefined;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  dataDir: string;
  port: number;
  uiPort: number;
  namespace: string;
  log: (message: string) => void;
  /** More `temporal server start-dev` flags. */
  extraArgs?: string[];
  /**
   * SQLite pragmas of the server's file (`--sqlite-pragma`); devServerSqlitePragmas when unset.
   * [] leaves SQLite's defaults (rollback journal, synchronous=full): the renewals benchmark passes
   * its BENCH_SQLITE_PRAGMAS here, so it can measure either.
   */
  sqlitePragmas?: string[];
}

/**
 * WAL with synchronous=normal: the dev server's single SQLite connection commits without
 * an fsync per transaction (a crash of the process loses nothing; a power cut may lose the
 * last transactions). bench/RESULTS.md (2,000 renewals): the no-op workflow wave ran 3.3x as
 * fast as in rollback-journal mode (54.9/s against 16.5/s), the engine's renewals 3.1x.
 */
export const devServerSqlitePragmas = ['journal_mode=wal', 'synchronous=normal'];

/** `--search-attribute Name=Type` pairs for the project's custom search attributes. */
export function searchAttributeArgs(): string[] {
  return customSearchAttributes.flatMap((key) => [
    '--search-attribute',
    `${key.name}=${TypedSearchAttributes.toMetadataType(key.type)}`,
  ]);
}

/**
 * Runs `temporal server start-dev` with its SQLite file in `dataDir`, so workflows
 * survive a restart, the Web UI on `uiPort`, and our search attributes registered.
 * The child gets a process group of its own so a terminal's Ctrl-C reaches only
 * us, and we stop it last, after the worker has let go.
 */
export async function startTemporalDevServer(options: DevServerOptions): Promise<RunningTemporal> {
  const cli = await resolveTemporalCli({ log: options.log });
  if ('sdkDownload' in cli) return startWithSdkDownload(options);

  fs.mkdirSync(options.dataDir, { recursive: true });
  const pidFile = path.join(options.dataDir, 'temporal.pid');
  await stopLeftoverFromPidFile(pidFile, options.log);
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--db-filename',
    path.join(options.dataDir, 'temporal.db'),
    '--namespace',
    options.namespace,
    '--log-level',
    'error',
    ...searchAttributeArgs(),
    ...(options.sqlitePragmas ?? devServerSqlitePragmas).flatMap((pragma) => ['--sqlite-pragma', pragma]),
    ...(options.extraArgs ?? []),
  ];
  const logFile = fs.openSync(path.join(options.dataDir, 'temporal-server.log'), 'a');
  const child: ChildProcess = spawn(cli.path, args, { detached: true, stdio: ['ignore', logFile, logFile] });
  fs.closeSync(logFile);
  fs.writeFileSync(pidFile, `${child.pid}\n`);
  let exited = false;
  child.once('exit', () => (exited = true));

  const address = `127.0.0.1:${options.port}`;
  try {
    await waitForPort(options.port, '127.0.0.1', 60_000);
    await waitUntilServing(address, 60_000);
  } catch (error) {
    await stopPid(child.pid!, 'SIGTERM');
    throw new Error(
      `Temporal dev server did not come up (${(error as Error).message}); see ${path.join(options.dataDir, 'temporal-server.log')}`,
    );
  }
  return {
    address,
    uiUrl: `http://localhost:${options.uiPort}`,
    stop: async () => {
      if (!exited) await stopPid(child.pid!, 'SIGTERM', 15_000);
      fs.rmSync(pidFile, { force: true });
    },
  };
}

/** Polls the frontend until it answers a real RPC, not just a TCP accept. */
export async function waitUntilServing(address: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`Temporal at ${address} not serving: ${String(lastError)}`);
}

/** Last resort: the SDK downloads a CLI from the internet (works on a laptop, not offline). */
async function startWithSdkDownload(options: DevServerOptions): Promise<RunningTemporal> {
  if (!sdkDownloadAllowed()) throw new MissingToolError(temporalCliHelp);
  options.log('no Temporal CLI on this machine; trying the SDK download (needs the internet)');
  const { TestWorkflowEnvironment } = await import('@temporalio/testing').catch(() => {
    throw new MissingToolError(temporalCliHelp);
  });
  try {
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        ip: '127.0.0.1',
        port: options.port,
        ui: true,
        uiPort: options.uiPort,
        dbFilename: path.join(options.dataDir, 'temporal.db'),
        namespace: options.namespace,
        searchAttributes: customSearchAttributes,
      },
    });
    return { address: env.address, uiUrl: `http://localhost:${options.uiPort}`, stop: () => env.teardown() };
  } catch (error) {
    throw new MissingToolError(
      `${temporalCliHelp}\n(The SDK download failed too: ${(error as Error).message.split('\n')[0]})`,
    );
  }
}
