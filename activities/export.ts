/**
 * The export-writing activity on its own: what a dedicated exports worker registers
 * (export-worker.ts, EXPORTS_TASK_QUEUE) without the rest of the engine's activities and
 * their libraries, and what createActivities (activities/index.ts) includes for the
 * all-in-one worker. Thin: services/exports/run.ts does the work.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { ApplicationFailure, Context } from '@temporalio/activity';

import { Export } from '../db/entities/index.ts';
import { runExport } from '../services/exports/run.ts';
import { type ExportStorage, failingToPublish } from '../services/exports/storage.ts';

export interface ExportActivityDeps {
  orm: MikroORM;
  /** Where export files are written (services/exports/storage.ts); exports fail without it. */
  exportStorage?: ExportStorage | undefined;
  /** Processors.isTestMode: invoice PDFs in a zip say TEST for a mode that moves no real money. */
  isTestMode: (livemode: boolean) => boolean;
}

export function createExportActivities(deps: ExportActivityDeps) {
  return {
    /**
     * Writes an export's file from its first row, heartbeating the rows written (services/exports/run.ts).
     * `failWrites` (a sandbox export of POST /v1/test_helpers/exports): the storage refuses each finished file.
     */
    async writeExport(exportId: string, options: { failWrites?: boolean } = {}): Promise<string> {
      if (!deps.exportStorage) throw ApplicationFailure.nonRetryable('No export storage is configured on this worker.');
      const context = Context.current();
      const em = deps.orm.em.fork();
      let storage = deps.exportStorage;
      if (options.failWrites) {
        // The API makes such exports in the sandbox only; a live one is never failed on purpose.
        const { livemode } = await em.findOneOrFail(Export, { id: exportId }, { fields: ['livemode'] });
        if (livemode)
          throw ApplicationFailure.nonRetryable(`export ${exportId} is live: writes are failed in the sandbox only.`);
        storage = failingToPublish(storage);
      }
      return runExport(em, storage, exportId, (rows) => context.heartbeat(rows), { isTestMode: deps.isTestMode });
    },
  };
}
