import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';

import { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';

import { customSearchAttributes } from '../workflows/search-attributes.ts';
import { freePort, stopPid } from './processes.ts';
import { waitUntilServing } from './temporal-dev-server.ts';

export interface RunningTestServer {
  address: string;
  pid: number;
  /** Milliseconds from spawn to the first answered RPC (measured: JVM start on this machine). */
  startupMs: number;
  stop(): Promise<void>;
}

/**
 * Starts one time-skipping test server (Java from Maven, or a native binary) on
 * a free port and waits until it answers, however long the JVM takes. We start
 * it ourselves rather than let the SDK do it because the SDK gives a test server
 * about 5 s, and a JVM on two busy cores can need more.
 */
export async function startTestServer(
  launch: { command: string; args: string[] },
  logFile?: string,
): Promise<RunningTestServer> {
  const port = await freePort();
  const started = Date.now();
  const out = logFile ? fs.openSync(logFile, 'a') : 'ignore';
  const child: ChildProcess = spawn(launch.command, [...launch.args, String(port)], { stdio: ['ignore', out, out] });
  if (typeof out === 'number') fs.closeSync(out);
  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilServing(address, 120_000);
    await registerSearchAttributes(address, 'default');
  } catch (error) {
    await stopPid(child.pid!, 'SIGKILL');
    throw error;
  }
  return {
    address,
    pid: child.pid!,
    startupMs: Date.now() - started,
    stop: () => stopPid(child.pid!, 'SIGTERM', 5_000),
  };
}

/** The proto enum values of IndexedValueType for the attribute types we use. */
const indexedValueType: Partial<Record<SearchAttributeType, number>> = {
  [SearchAttributeType.KEYWORD]: 2,
  [SearchAttributeType.INT]: 3,
  [SearchAttributeType.BOOL]: 5,
  [SearchAttributeType.DATETIME]: 6,
};

/** Registers the project's custom search attributes (the dev server gets them as start flags instead). */
export async function registerSearchAttributes(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        customSearchAttributes.map((key) => [key.name, indexedValueType[key.type]!]),
      ),
    });
  } finally {
    await connection.close();
  }
}
