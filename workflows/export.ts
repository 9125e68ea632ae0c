/**
 * exportWorkflow: one per export, workflow id = export id (`exp_...`). Its activity
 * writes the whole file, heartbeating the rows written; a worker that dies mid-file
 * lets the heartbeat time out and the retry write a fresh file from the first row
 * (services/exports/run.ts publishes a file only once complete). When the retries are
 * spent the export is recorded failed. Deterministic code only.
 */
import { ActivityFailure, ApplicationFailure, patched, proxyActivities, setCurrentDetails } from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';

const writerOptions = {
  startToCloseTimeout: '2 hours',
  // The activity heartbeats after every page of 500 rows (milliseconds apart); a worker that died is noticed after this.
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 3 },
} as const;
const writer = proxyActivities<Activities>(writerOptions);
const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * `taskQueue`: where the file-writing activity runs when it is not the workflow's own queue
 * (EXPORTS_TASK_QUEUE: dedicated exports workers, export-worker.ts). Exports started without
 * it (all recorded histories) schedule the activity exactly as before.
 * `failWrites`: a sandbox export made by POST /v1/test_helpers/exports (api/routes/test-helpers.ts):
 * every attempt's file fails to be stored, so the retries are spent and the export fails as any would.
 */
export async function exportWorkflow(input: {
  exportId: string;
  taskQueue?: string;
  failWrites?: boolean;
}): Promise<string> {
  setCurrentDetails(`Export ${input.exportId}.`);
  try {
    const write = input.taskQueue
      ? proxyActivities<Activities>({ ...writerOptions, taskQueue: input.taskQueue })
      : writer;
    const status =
      input.failWrites && patched('export-test-helper-fail-writes')
        ? await write.writeExport(input.exportId, { failWrites: true })
        : await write.writeExport(input.exportId);
    setCurrentDetails(`Export ${status}.`);
    return status;
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const cause = error.cause;
    const message =
      cause instanceof ApplicationFailure || cause instanceof Error ? cause.message : 'the export could not be written';
    await bookkeeping.failExport(input.exportId, message);
    setCurrentDetails('Export failed.');
    return 'failed';
  }
}
