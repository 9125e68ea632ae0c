/**
 * `npm run tools`: finds, builds or fetches the Temporal CLI, the time-skipping
 * test server and stripe-mock now, with progress, instead of on first use.
 * `npm run tools -- --server` also builds the real Temporal server and its SQL
 * schema tool (TEMPORAL_SERVER=postgres, the renewals benchmark's --temporal postgres).
 */
import {
  describeCli,
  MissingToolError,
  resolveStripeMock,
  resolveTemporalCli,
  resolveTemporalServer,
  resolveTestServer,
  temporalCliHelp,
  testServerHelp,
  toolsCacheDir,
} from './tools.ts';

try {
  console.log(`tools cache: ${toolsCacheDir()}`);
  const cli = await resolveTemporalCli();
  if (!('path' in cli)) throw new MissingToolError(temporalCliHelp);
  console.log(`Temporal CLI: ${cli.path} (${describeCli(cli.path)})`);
  const testServer = await resolveTestServer();
  if (!('command' in testServer)) throw new MissingToolError(testServerHelp);
  console.log(`time-skipping test server: ${[testServer.command, ...testServer.args].join(' ')} <port>`);
  console.log(`stripe-mock: ${await resolveStripeMock()}`);
  if (process.argv.includes('--server')) {
    const server = await resolveTemporalServer();
    console.log(`Temporal server: ${server.server}; schema tool: ${server.sqlTool}`);
  }
} catch (error) {
  if (!(error instanceof MissingToolError)) throw error;
  console.error(`\n${error.message}`);
  process.exit(1);
}
