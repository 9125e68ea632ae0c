/**
 * Records an export `pending` and starts its workflow (POST /v1/exports; POST /v1/test_helpers/exports
 * with `failWrites`, a sandbox export whose every write fails: api/routes/test-helpers.ts).
 */
import { Export, type ExportFormat, type ExportResource } from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import { exportWorkflow } from '../../workflows/export.ts';
import type { ServiceContext, WorkflowStartContext } from '../context.ts';

/**
 * What starting an export needs: the context's database and Temporal (the workflow starts on its live queue), and the
 * exports queue of the configuration (EXPORTS_TASK_QUEUE: dedicated exports workers write the file), read per request.
 */
export type ExportStarter = Pick<ServiceContext, 'orm'> &
  WorkflowStartContext & {
    exportsTaskQueue?: string | undefined;
  };

/** An export as asked for, already validated (api/routes/exports.ts CreateBody). */
export interface ExportRequest {
  resource: ExportResource;
  format: ExportFormat;
  query?: string | undefined;
  created?: { gte?: Date | undefined; lte?: Date | undefined } | undefined;
  columns?: string[] | undefined;
  filters?: Record<string, string> | undefined;
  time_zone: string;
}

export async function startExport(
  starter: ExportStarter,
  scope: { accountId: string; livemode: boolean },
  body: ExportRequest,
  options: { failWrites?: boolean } = {},
): Promise<Export> {
  const { orm, exportsTaskQueue } = starter;
  const { client, taskQueue } = starter.temporal;
  const now = new Date();
  const em = orm.em.fork();
  const e = em.create(Export, {
    id: newId('export'),
    accountId: scope.accountId,
    livemode: scope.livemode,
    resource: body.resource,
    format: body.format,
    query: body.query ?? null,
    createdGte: body.created?.gte ?? null,
    createdLte: body.created?.lte ?? null,
    columns: body.columns ?? null,
    filters: body.filters && Object.keys(body.filters).length ? body.filters : null,
    timeZone: body.time_zone,
    status: 'pending',
    rowsWritten: 0,
    rowsExpected: null,
    rowCount: null,
    fileSize: null,
    fileContentType: null,
    fileSha256: null,
    expiresAt: null,
    error: null,
    createdAt: now,
    updatedAt: now,
  });
  await em.flush();
  await client.workflow.start(exportWorkflow, {
    workflowId: e.id,
    taskQueue,
    // Dedicated exports workers (EXPORTS_TASK_QUEUE) write the file; otherwise the workflow's own queue does.
    args: [
      {
        exportId: e.id,
        ...(exportsTaskQueue && exportsTaskQueue !== taskQueue ? { taskQueue: exportsTaskQueue } : {}),
        ...(options.failWrites ? { failWrites: true } : {}),
      },
    ],
    staticSummary: `Export ${e.id}`,
  });
  return e;
}
