/**
 * Benchmark: an export of BENCH_EXPORT_ROWS (default 200,000) transactions to csv and
 * xlsx, each a real exportWorkflow on a Temporal dev server (`temporal server start-dev`),
 * its file written by a real worker process, on an embedded PostgreSQL in a temporary
 * folder. Two worker shapes, each a child process of this one:
 *
 *   - `exports`: the dedicated exports worker (export-worker.ts, `npm run worker:exports`)
 *     polling EXPORTS_TASK_QUEUE, the production shape for large exports; this process runs
 *     the export workflow (a bundle of workflows/export.ts) on the workflows' queue;
 *   - `all-in-one`: the engine's worker (worker.ts, `npm run worker`: every workflow, every
 *     activity) writing the file itself, EXPORTS_TASK_QUEUE unset.
 *
 * For each export: seconds from starting the workflow to its result, and the worker
 * process's RSS from /proc: before the export, and its peak during it (the kernel's
 * high-water mark VmHWM, reset through /proc/<pid>/clear_refs just before the export, so it
 * is the true peak, not a sample). Writes its section of bench/RESULTS.md (BENCH_WRITE=0:
 * print only). BENCH_EXPORT_WORKERS=exports,all-in-one picks the shapes; BENCH_EXPORT_FORMATS
 * the formats.
 *
 *   npm run bench:exports
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';

import { Export } from '../db/entities/index.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../dev/postgres.ts';
import { freePort } from '../dev/processes.ts';
import { startTemporalDevServer } from '../dev/temporal-dev-server.ts';
import { newId } from '../domain/ids.ts';
import { installTemporalRuntime } from '../export-worker.ts';
import { failExport } from '../services/exports/run.ts';
import { exportWorkflow } from '../workflows/export.ts';
import { resultsFile, writeSection } from './harness.ts';

type Shape = 'exports' | 'all-in-one';
type Format = 'csv' | 'xlsx' | 'json' | 'pdf';
const rows = Number(process.env.BENCH_EXPORT_ROWS ?? 200_000);
const formats = (process.env.BENCH_EXPORT_FORMATS ?? 'csv,xlsx').split(',') as Format[];
const shapes = (process.env.BENCH_EXPORT_WORKERS ?? 'exports,all-in-one').split(',') as Shape[];
const root = fileURLToPath(new URL('..', import.meta.url));
const say = (message: string) => console.log(`[bench:exports] ${message}`);

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM). */
function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/**
 * The node flags and entry file of an npm script (`node --flag … file.ts`), so a worker runs here
 * exactly as `npm run <script>` runs it. BENCH_EXPORT_NODE_FLAGS overrides the flags (experiments).
 */
function npmScript(name: string): { flags: string[]; entry: string } {
  const scripts = (
    JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  const words = scripts[name]!.split(/\s+/);
  if (words[0] !== 'node') throw new Error(`npm script ${name} does not start with node: ${scripts[name]}`);
  const override = process.env.BENCH_EXPORT_NODE_FLAGS;
  return {
    flags: override === undefined ? words.slice(1, -1) : override.split(/\s+/).filter(Boolean),
    entry: words[words.length - 1]!,
  };
}

/** Starts a worker as its npm script does, as a child process, and waits for its "running" log line. */
async function startWorkerProcess(
  script: string,
  env: Record<string, string>,
  ready: RegExp,
): Promise<ChildProcess & { command: string }> {
  const { flags, entry } = npmScript(script);
  const child = Object.assign(
    spawn(process.execPath, [...flags, path.join(root, entry)], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    {
      command: ['node', ...flags, entry].join(' '),
    },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${entry} did not start in 120 s:\n${output}`)), 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${entry} exited (${code}) before it was ready:\n${output}`)));
  });
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-exports-'));
fs.chmodSync(tmpDir, 0o755);
const postgres = await startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port: await freePort() });
const children: ChildProcess[] = [];
let temporalServer: { stop(): Promise<void> } | undefined;
try {
  const url = postgres.url('billing_bench');
  await ensureDatabase(postgres.url('postgres'), 'billing_bench');
  const orm = await openOrm(url);
  await migrate(orm, url);
  const accountId = 'acct_bench';
  const sql = orm.em.getConnection();
  // Ids in the transactions' shape: a fixed prefix and a zero-padded counter sort like ULIDs do.
  await sql.execute(
    `insert into transactions (id, account_id, livemode, amount, currency, type, status, reference, metadata, risk_level, risk_score, created_at, updated_at, amount_refunded)
     select 'txn_' || lpad(g::text, 26, '0'), ?, true, (g % 100000) + 1, 'USD', 'credit', 'succeeded', 'order-' || g, '{"k":"v"}'::jsonb, 'low', 0,
            now() - (g || ' seconds')::interval, now(), 0
     from generate_series(1, ?) g`,
    [accountId, rows],
  );
  // As autovacuum would after a load this size: the planner then walks the (account_id, livemode, id) index.
  await sql.execute('analyze transactions');
  say(`${rows} transactions loaded`);

  installTemporalRuntime('warn');
  const namespace = 'default';
  const temporal = await startTemporalDevServer({
    dataDir: path.join(tmpDir, 'temporal'),
    port: await freePort(),
    uiPort: await freePort(),
    namespace,
    log: say,
  });
  temporalServer = temporal;
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace });
  const dataDir = path.join(tmpDir, 'data');
  const baseEnv = {
    DATABASE_URL: url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: namespace,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
  };

  const loadAtStart = os.loadavg()[0]!;
  const table: string[] = [];
  const peaks: Record<Shape, number[]> = { exports: [], 'all-in-one': [] };
  const starts: Record<Shape, number> = { exports: 0, 'all-in-one': 0 };
  const commands: Record<Shape, string> = { exports: '', 'all-in-one': '' };

  for (const shape of shapes) {
    const workflowQueue = `bench-${shape}`;
    let workerProcess: ChildProcess & { command: string };
    let workflowWorker: { worker: Worker; run: Promise<void>; connection: NativeConnection } | undefined;
    let exportsQueue: string | undefined;
    if (shape === 'exports') {
      exportsQueue = 'bench-exports-files';
      workerProcess = await startWorkerProcess(
        'worker:exports',
        { ...baseEnv, TEMPORAL_TASK_QUEUE: workflowQueue, EXPORTS_TASK_QUEUE: exportsQueue },
        /exports worker running/,
      );
      // The workflow side, in this process: exportWorkflow alone on the workflows' queue (failExport if the file cannot be written).
      const nativeConnection = await NativeConnection.connect({ address: temporal.address });
      const worker = await Worker.create({
        connection: nativeConnection,
        namespace,
        taskQueue: workflowQueue,
        workflowsPath: fileURLToPath(new URL('../workflows/export.ts', import.meta.url)),
        activities: { failExport: (id: string, message: string) => failExport(orm.em.fork(), id, message) },
      });
      workflowWorker = { worker, run: worker.run(), connection: nativeConnection };
    } else {
      workerProcess = await startWorkerProcess(
        'worker',
        { ...baseEnv, TEMPORAL_TASK_QUEUE: workflowQueue, EXPORTS_TASK_QUEUE: '' },
        /worker running/,
      );
    }
    children.push(workerProcess);
    const pid = workerProcess.pid!;
    starts[shape] = procStatus(pid, 'VmHWM');
    commands[shape] = workerProcess.command;
    say(
      `${shape} worker (\`${workerProcess.command}\`, pid ${pid}) running: RSS ${(procStatus(pid, 'VmRSS') / 1e6).toFixed(0)} MB, peak so far ${(starts[shape] / 1e6).toFixed(0)} MB`,
    );
    for (const format of formats) {
      const id = newId('export');
      const now = new Date();
      await orm.em.fork().insert(Export, {
        id,
        accountId,
        livemode: true,
        resource: 'transactions',
        format,
        timeZone: 'UTC',
        status: 'pending',
        rowsWritten: 0,
        createdAt: now,
        updatedAt: now,
      } as never);
      const before = procStatus(pid, 'VmRSS');
      // Resets the process's peak RSS (VmHWM) to its current RSS: what follows is this export's peak.
      fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
      const started = performance.now();
      const status = await client.workflow.execute(exportWorkflow, {
        workflowId: id,
        taskQueue: workflowQueue,
        args: [exportsQueue ? { exportId: id, taskQueue: exportsQueue } : { exportId: id }],
      });
      const seconds = (performance.now() - started) / 1000;
      const peak = procStatus(pid, 'VmHWM');
      const saved = await orm.em.fork().findOneOrFail(Export, { id });
      if (status !== 'succeeded') throw new Error(`export ${id} ${status}: ${saved.error}`);
      peaks[shape].push(peak);
      table.push(
        `| ${shape} | ${format} | ${saved.rowCount} | ${seconds.toFixed(1)} | ${(Number(saved.fileSize) / 1e6).toFixed(1)} | ${(before / 1e6).toFixed(0)} | ${(peak / 1e6).toFixed(0)} |`,
      );
      say(
        `${shape} ${format}: ${saved.rowCount} rows in ${seconds.toFixed(1)} s, ${(Number(saved.fileSize) / 1e6).toFixed(1)} MB; worker RSS ${(before / 1e6).toFixed(0)} MB before, peak ${(peak / 1e6).toFixed(0)} MB`,
      );
    }
    await stopProcess(workerProcess);
    if (workflowWorker) {
      workflowWorker.worker.shutdown();
      await workflowWorker.run;
      await workflowWorker.connection.close();
    }
  }
  await connection.close();
  await orm.close();

  const mb = (bytes: number) => Math.round(bytes / 1e6);
  const max = (values: number[]) => Math.max(...values);
  const heading = `## Exports: ${rows.toLocaleString('en')} transactions to a file`;
  const verdict = (shape: Shape) =>
    peaks[shape].length
      ? `${mb(max(peaks[shape]))} MB (${max(peaks[shape]) < 300e6 ? 'under' : 'over'} 300 MB; its peak while starting up was ${mb(starts[shape])} MB)`
      : 'not measured in this run';
  const section = [
    heading,
    '',
    `Written by \`npm run bench:exports\` (bench/exports.ts) on ${new Date().toISOString()}. Machine: ${os.cpus().length} cores, Node ${process.version}, ` +
      `embedded PostgreSQL and a Temporal dev server on the same machine, load average ${loadAtStart.toFixed(2)} at the start. One account with ${rows.toLocaleString('en')} ` +
      'transactions; each line is one export, a real exportWorkflow whose activity pages through the rows by keyset (500 a page) and streams them into ' +
      "the file (csv as a stream, xlsx with exceljs's streaming writer), written by a worker process: `exports` is the dedicated exports worker " +
      "(export-worker.ts, `npm run worker:exports`, polling EXPORTS_TASK_QUEUE: the export activity only, no workflows), `all-in-one` the engine's " +
      'worker (worker.ts: every workflow and activity) writing the file itself. Seconds from starting the workflow to its result. RSS is the worker ' +
      "process's, from /proc: before the export, and the kernel's high-water mark (VmHWM, reset just before the export) for its peak. " +
      `Commands: ${shapes.map((shape) => `${shape} \`${commands[shape]}\``).join(', ')}.`,
    '',
    '| worker | format | rows | seconds | file MB | RSS before MB | peak RSS MB |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...table,
    '',
    `The issue's goal is a worker under 300 MB while exporting. The process that writes exports in production (the dedicated exports worker) peaked at ${verdict('exports')}. ` +
      `The all-in-one worker (\`npm run worker\`/\`npm start\` without EXPORTS_TASK_QUEUE) peaked at ${verdict('all-in-one')}: most of that is there before ` +
      "any export (the workflow bundle and its V8 contexts, the Temporal core, every activity's libraries), which is why large exports get workers of their own.",
    '',
  ].join('\n');
  if (process.env.BENCH_WRITE === '0') console.log(section);
  else writeSection(resultsFile, heading, section);
} finally {
  for (const child of children) await stopProcess(child).catch(() => undefined);
  await temporalServer?.stop().catch(() => undefined);
  await postgres.stop();
  fs.rmSync(tmpDir, { recursive: true, force: true });
}
