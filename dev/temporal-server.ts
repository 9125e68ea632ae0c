/**
 * The production-shaped local Temporal: the real server (`temporal-server`
 * v1.29.1, the version docker-compose.yml runs) persisted in PostgreSQL with
 * several history shards, instead of the dev server's single SQLite file.
 * `npm start` uses it with TEMPORAL_SERVER=postgres; the renewals benchmark
 * with `--temporal postgres`.
 *
 * Like temporalio/auto-setup does in docker-compose.yml: the databases
 * `temporal` and `temporal_visibility` are created and their schemas set up or
 * upgraded with `temporal-sql-tool` (schemas embedded in the tool), the server
 * gets a generated config, then the namespace and the project's search
 * attributes are registered. All four services (frontend, history, matching,
 * worker) run in the one process, as auto-setup runs them.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { Client, Connection } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';

import { customSearchAttributes } from '../workflows/search-attributes.ts';
import { ensureDatabase } from './postgres.ts';
import { stopLeftoverFromPidFile, stopPid, waitForPort } from './processes.ts';
import { type RunningTemporal, waitUntilServing } from './temporal-dev-server.ts';
import { resolveTemporalServer } from './tools.ts';

const run = promisify(execFile);

export interface TemporalServerOptions {
  /** Config, logs and the pid file (the data itself is in PostgreSQL). */
  dataDir: string;
  /** The frontend's gRPC port; the server also takes the next 8 ports (membership, HTTP, the other services). */
  port: number;
  namespace: string;
  postgres: { host: string; port: number; user: string; password: string };
  /** Database names: `<prefix>` and `<prefix>_visibility`. */
  databasePrefix?: string;
  /** Fixed when the database is first set up; a different number later is refused. */
  historyShards?: number;
  log: (message: string) => void;
}

export const defaultHistoryShards = 4;

/** Ports the server binds, consecutive from the frontend's. */
function ports(base: number) {
  return {
    frontend: { grpc: base, membership: base + 1, http: base + 2 },
    history: { grpc: base + 3, membership: base + 4 },
    matching: { grpc: base + 5, membership: base + 6 },
    worker: { grpc: base + 7, membership: base + 8 },
  };
}

function configYaml(
  options: TemporalServerOptions,
  databases: { main: string; visibility: string },
  shards: number,
): string {
  const p = ports(options.port);
  const store = (database: string, maxConns: number) => `      sql:
        pluginName: "postgres12"
        databaseName: "${database}"
        connectAddr: "${options.postgres.host}:${options.postgres.port}"
        connectProtocol: "tcp"
        user: "${options.postgres.user}"
        password: "${options.postgres.password}"
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: "1h"`;
  const service = (name: string, rpc: { grpc: number; membership: number; http?: number }) => `  ${name}:
    rpc:
      grpcPort: ${rpc.grpc}
      membershipPort: ${rpc.membership}
      bindOnLocalHost: true${rpc.http ? `\n      httpPort: ${rpc.http}` : ''}`;
  return `# Written by dev/temporal-server.ts on every start; edit that file, not this one.
log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${shards}
  datastores:
    postgres-default:
${store(databases.main, 20)}
    postgres-visibility:
${store(databases.visibility, 4)}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"

services:
${service('frontend', p.frontend)}
${service('history', p.history)}
${service('matching', p.matching)}
${service('worker', p.worker)}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${p.frontend.grpc}"

dcRedirectionPolicy:
  policy: "noop"

dynamicConfigClient:
  filepath: "${path.join(options.dataDir, 'config', 'dynamicconfig.yaml')}"
  pollInterval: "10s"
`;
}

/**
 * Dynamic config (the server reads the file again every 10 s, `pollInterval` above).
 *
 * The server reads search attributes through a cache it refreshes every minute. While it
 * starts, the project's attributes may have just been added (a new database): the cache is
 * bypassed (`forceSearchAttributesCacheRefreshOnRead`, as the dev server and the docker-compose
 * development config do) so the start-up probe, and the first subscription, can use them at
 * once. Once the probe has passed, the file is written again without it, as production runs:
 * bypassed, the server read the cluster's metadata and the namespace from PostgreSQL about
 * 29,000 times in a round of 2,000 subscription starts and 2,000 renewals (pg_stat_statements),
 * and a renewal cost it about a fifth more CPU (docs/scaling.md).
 */
const dynamicConfigYaml = (bypassSearchAttributeCache: boolean) => `system.forceSearchAttributesCacheRefreshOnRead:
  - value: ${bypassSearchAttributeCache}
frontend.persistenceMaxQPS:
  - value: 10000
history.persistenceMaxQPS:
  - value: 45000
`;

/** Creates, sets up or upgrades one database's schema with temporal-sql-tool (idempotent). */
async function setUpSchema(
  sqlTool: string,
  options: TemporalServerOptions,
  database: string,
  schemaName: string,
  shards: number,
): Promise<void> {
  const pg = options.postgres;
  await ensureDatabase(
    `postgres://${encodeURIComponent(pg.user)}:${encodeURIComponent(pg.password)}@${pg.host}:${pg.port}/postgres`,
    database,
  );
  const base = [
    '--plugin',
    'postgres12',
    '--ep',
    pg.host,
    '-p',
    String(pg.port),
    '-u',
    pg.user,
    '--pw',
    pg.password,
    '--db',
    database,
  ];
  const env = { ...process.env, SQL_PASSWORD: pg.password };
  const marker = path.join(options.dataDir, `${database}.schema`);
  if (!fs.existsSync(marker)) {
    // setup-schema -v 0.0 makes the version table once; a second run on a set-up database fails harmlessly.
    await run(sqlTool, [...base, 'setup-schema', '-v', '0.0'], { env }).catch((error: Error & { stderr?: string }) => {
      if (!/already exists/i.test(`${error.stderr ?? ''}${error.message}`)) throw error;
    });
  }
  await run(sqlTool, [...base, 'update-schema', '--schema-name', schemaName], { env });
  fs.writeFileSync(marker, `${schemaName} shards=${shards}\n`);
}

/**
 * Registers the namespace (1 day retention) and our search attributes when
 * missing, then waits until a workflow start using them is accepted: the
 * server's namespace registry refreshes every few seconds, so each step is
 * retried until it passes or 90 s have gone.
 */
async function registerNamespace(address: string, namespace: string, log: (m: string) => void): Promise<void> {
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const deadline = Date.now() + 90_000;
  let said = false;
  try {
    for (;;) {
      try {
        const known = await connection.workflowService.describeNamespace({ namespace }).then(
          () => true,
          () => false,
        );
        if (!known) {
          log(`registering namespace ${namespace}`);
          await connection.workflowService
            .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') })
            .catch((error: Error) => {
              if (!/already (registered|exists)/i.test(error.message)) throw error;
            });
        }
        const existing = await connection.operatorService.listSearchAttributes({ namespace });
        const missing = customSearchAttributes.filter((key) => !(key.name in (existing.customAttributes ?? {})));
        if (missing.length > 0) {
          if (!said) log(`adding search attributes ${missing.map((k) => k.name).join(', ')}`);
          said = true;
          await connection.operatorService.addSearchAttributes({
            namespace,
            searchAttributes: Object.fromEntries(missing.map((key) => [key.name, indexedValueType(key.type)])),
          });
        }
        const probe = await client.workflow.start('namespaceProbe', {
          taskQueue: 'namespace-probe',
          workflowId: `probe-${Date.now()}`,
          typedSearchAttributes: new TypedSearchAttributes(
            customSearchAttributes.filter((k) => k.type === 'KEYWORD').map((key) => ({ key, value: 'probe' }) as never),
          ),
        });
        await probe.terminate('start-up probe');
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  } finally {
    await connection.close();
  }
}

/** The proto enum value of a search attribute type (TEXT 1, KEYWORD 2, INT 3, DOUBLE 4, BOOL 5, DATETIME 6, KEYWORD_LIST 7). */
function indexedValueType(type: Parameters<typeof TypedSearchAttributes.toMetadataType>[0]): number {
  const byName: Record<string, number> = {
    Text: 1,
    Keyword: 2,
    Int: 3,
    Double: 4,
    Bool: 5,
    Datetime: 6,
    KeywordList: 7,
  };
  return byName[TypedSearchAttributes.toMetadataType(type)]!;
}

export async function startTemporalServer(options: TemporalServerOptions): Promise<RunningTemporal> {
  const tools = await resolveTemporalServer({ log: options.log });
  const shards = options.historyShards ?? defaultHistoryShards;
  const prefix = options.databasePrefix ?? 'temporal';
  const databases = { main: prefix, visibility: `${prefix}_visibility` };
  fs.mkdirSync(path.join(options.dataDir, 'config'), { recursive: true });

  const shardsFile = path.join(options.dataDir, 'history-shards');
  if (fs.existsSync(shardsFile) && Number(fs.readFileSync(shardsFile, 'utf8')) !== shards) {
    throw new Error(
      `Temporal's database in ${options.dataDir} was set up with ${fs.readFileSync(shardsFile, 'utf8').trim()} history shards; the number cannot change (asked for ${shards}). Use another database prefix or data folder.`,
    );
  }
  options.log(
    `setting up Temporal's schemas in PostgreSQL (${databases.main}, ${databases.visibility}), ${shards} history shards`,
  );
  await setUpSchema(tools.sqlTool, options, databases.main, 'postgresql/v12/temporal', shards);
  await setUpSchema(tools.sqlTool, options, databases.visibility, 'postgresql/v12/visibility', shards);
  fs.writeFileSync(shardsFile, `${shards}\n`);

  fs.writeFileSync(path.join(options.dataDir, 'config', 'development.yaml'), configYaml(options, databases, shards));
  const dynamicConfigFile = path.join(options.dataDir, 'config', 'dynamicconfig.yaml');
  fs.writeFileSync(dynamicConfigFile, dynamicConfigYaml(true));

  const pidFile = path.join(options.dataDir, 'temporal-server.pid');
  await stopLeftoverFromPidFile(pidFile, options.log);
  const logPath = path.join(options.dataDir, 'temporal-server.log');
  const logFile = fs.openSync(logPath, 'a');
  const child: ChildProcess = spawn(
    tools.server,
    ['--root', options.dataDir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'],
    {
      detached: true,
      stdio: ['ignore', logFile, logFile],
    },
  );
  fs.closeSync(logFile);
  fs.writeFileSync(pidFile, `${child.pid}\n`);
  let exited = false;
  child.once('exit', () => (exited = true));

  const address = `127.0.0.1:${options.port}`;
  try {
    await waitForPort(options.port, '127.0.0.1', 90_000);
    await waitUntilServing(address, 90_000);
    await registerNamespace(address, options.namespace, options.log);
    // The attributes are in use: from the next reload on (within 10 s), the cache serves them, as in production.
    fs.writeFileSync(dynamicConfigFile, dynamicConfigYaml(false));
  } catch (error) {
    await stopPid(child.pid!, 'SIGTERM');
    throw new Error(`Temporal server did not come up (${(error as Error).message}); see ${logPath}`);
  }
  return {
    address,
    uiUrl: undefined,
    stop: async () => {
      if (!exited) await stopPid(child.pid!, 'SIGTERM', 30_000);
      fs.rmSync(pidFile, { force: true });
    },
  };
}
