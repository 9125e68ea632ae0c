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
  let failed = 0;
  for (const file of args) {
    try {
      await Worker.runReplayHistory(
        { workflowsPath: path, replayName: file },
        historyFromJSON(JSON.parse(fs.readFileSync(file, 'utf8'))),
      );
      console.log(`replayed ${file}`);
    } catch (error) {
      failed++;
      console.log(`FAILED ${file}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  process.exit(failed ? 1 : 0);
} else {
  console.error('usage: node dev/histories.ts record <address> <workflow id> <run id> <file> | replay <file>...');
  process.exit(2);
}
