/**
 * Workflow histories for replay checks, as a plain command: record a run's
 * history from any Temporal server (the test server, or production to capture a
 * real subscription), and replay files against the workflow code of this clone.
 * test/replay.test.ts drives it.
 *
 *   node dev/histories.ts record <temporal address> <workflow id> <run id> <file>
 *   node dev/histories.ts replay <file>...        exits 1 if any replay fails
 */
import fs from 'node:fs';

import { Client, Connection } from '@temporalio/client';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';

import { workflowsPath } from '../worker.ts';

const [command, ...args] = process.argv.slice(2);
if (command === 'record') {
  const [address, workflowId, runId, file] = args;
  const connection = await Connection.connect({ address: address! });
  const history = await new Client({ connection }).workflow.getHandle(workflowId!, runId).fetchHistory();
  fs.writeFileSync(file!, historyToJSON(history));
  await connection.close();
} else if (command === 'replay') {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const path = process.env.REPLAY_WORKFLOWS_PATH ?? workflowsPath;
  // One bundle of the workflow code for all the files (a bundle per file took most of the replay's time).
  const histories = args.map((file) => ({
    workflowId: file,
    history: historyFromJSON(JSON.parse(fs.readFileSync(file, 'utf8'))),
  }));
  let failed = 0;
  for await (const result of Worker.runReplayHistories({ workflowsPath: path, replayName: 'histories' }, histories)) {
    if (result.error) {
      failed++;
      console.log(`FAILED ${result.workflowId}: ${result.error.message.split('\n')[0]}`);
    } else console.log(`replayed ${result.workflowId}`);
  }
  process.exit(failed ? 1 : 0);
} else {
  console.error('usage: node dev/histories.ts record <address> <workflow id> <run id> <file> | replay <file>...');
  process.exit(2);
}
