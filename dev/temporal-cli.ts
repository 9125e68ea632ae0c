/**
 * `npm run temporal -- <args>`: the Temporal CLI this project resolves (dev/tools.ts:
 * TEMPORAL_CLI_PATH, PATH, .tools, the per-user cache, else built with Go), pointed at
 * the server `npm start` uses: TEMPORAL_ADDRESS when set, else the dev server npm start
 * runs on 127.0.0.1:TEMPORAL_PORT (7233), namespace TEMPORAL_NAMESPACE (default).
 * Example: `npm run temporal -- workflow list`.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { resolveTemporalCli, temporalCliHelp } from './tools.ts';

/** The server and namespace the CLI talks to: the ones dev/start.ts chooses. */
export function devTemporalTarget(env: NodeJS.ProcessEnv = process.env): { address: string; namespace: string } {
  return {
    address: env.TEMPORAL_ADDRESS || `127.0.0.1:${Number(env.TEMPORAL_PORT ?? 7233)}`,
    namespace: env.TEMPORAL_NAMESPACE || 'default',
  };
}

async function main(): Promise<void> {
  const cli = await resolveTemporalCli({ log: (message) => console.error(message) });
  if (!('path' in cli)) {
    console.error(temporalCliHelp);
    process.exit(1);
  }
  const target = devTemporalTarget();
  // The CLI reads its connection from these variables; flags the caller passes still win.
  const child = spawn(cli.path, process.argv.slice(2), {
    stdio: 'inherit',
    env: { ...process.env, TEMPORAL_ADDRESS: target.address, TEMPORAL_NAMESPACE: target.namespace },
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    console.error(`Could not run ${cli.path}: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
