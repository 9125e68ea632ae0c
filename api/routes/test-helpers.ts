import { createRoute, z } from '@hono/zod-openapi';

import { exportFormats, exportResources } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { ExportSchema, serializeExport } from '../../objects/export.ts';
import { serializeTestClock, TestClockSchema } from '../../objects/test-clock.ts';
import { startExport } from '../../services/exports/start.ts';
import { findOwnTestClock } from '../../services/test-clocks/clocks.ts';
import { maxStallQuietTimeoutSeconds, stallTestClock } from '../../services/test-clocks/stall.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { errorResponses, idParam } from '../schemas.ts';

/**
 * Sandbox test helpers, as Stripe's /v1/test_helpers: they send a sandbox object down a failure
 * path the engine takes for real, so an integration can see the event it must handle
 * (`billing trigger export.failed`, `billing trigger test_clock.internal_failure`). Nothing is
 * forged: the export's writer fails and its retries are spent; the clock's advance waits for a
 * workflow that never reports. Live mode answers 400 `livemode_not_allowed`.
 */
const tags = ['Test helpers'];
const sandboxOnly = 'Sandbox only: in live mode it answers 400 `livemode_not_allowed`, nothing made.';

const FailingExportBody = z
  .object({ resource: z.enum(exportResources), format: z.enum(exportFormats) })
  .strict()
  .openapi({ example: { resource: 'customers', format: 'csv' } });

const failingExport = createRoute({
  method: 'post',
  path: '/exports',
  tags,
  summary: 'Start a sandbox export that fails',
  description:
    'Starts an export of `resource` in `format` as POST /v1/exports does, except that the export storage refuses each finished file as a full disk would (ENOSPC). ' +
    'The writer runs and fails three times (about 6 s of retries), then the export is recorded `failed` with that `error`, and export.failed is sent. ' +
    sandboxOnly,
  request: { body: { ...json(FailingExportBody), required: true } },
  responses: { 202: { description: 'Accepted', ...json(ExportSchema) }, ...errorResponses(400, 401) },
});

const StallBody = z
  .object({
    quiet_timeout: z
      .number()
      .int()
      .min(1)
      .max(maxStallQuietTimeoutSeconds)
      .default(2)
      .openapi({
        description: `Seconds the clock's next advance waits for its due work to go quiet before it fails (default 2; at most ${maxStallQuietTimeoutSeconds}). A clock not stalled waits 5 minutes.`,
      }),
  })
  .strict()
  .openapi({ example: { quiet_timeout: 2 } });

const stallClock = createRoute({
  method: 'post',
  path: '/test_clocks/{id}/stall',
  tags,
  summary: 'Stall a sandbox test clock: its next advance fails',
  description:
    "Adds to a `ready` clock a stand-in for a workflow that never reports having done its work, and shortens the clock's quiet timeout to `quiet_timeout` seconds. " +
    'The next POST /v1/test_clocks/{id}/advance then waits that long and ends as one held up by a stuck workflow: status `internal_failure`, `status_details.internal_failure.message` naming `stalled_by_test_helper`, and test_clock.internal_failure. ' +
    'A failed clock cannot advance again: delete it. A clock not `ready` answers 409 `invalid_state`. ' +
    sandboxOnly,
  request: { params: idParam('clock'), body: { ...json(StallBody), required: false } },
  responses: { 200: { description: 'Stalled', ...json(TestClockSchema) }, ...errorResponses(400, 401, 404, 409) },
});

export function testHelpersApp({ config, context }: AppDeps) {
  const { orm, temporal } = context;
  const sandboxScope = async (c: Parameters<typeof accountScope>[0]) => {
    const scope = await accountScope(c, orm);
    if (scope.livemode)
      throw new ApiError(
        'livemode_not_allowed',
        'Test helpers act in the sandbox only: send x-sandbox-mode: true, or use a test key.',
      );
    return scope;
  };
  return newOpenApiApp()
    .openapi(failingExport, async (c) => {
      const scope = await sandboxScope(c);
      const { resource, format } = c.req.valid('json');
      const e = await startExport(
        { orm, temporal, exportsTaskQueue: config.exportsTaskQueue },
        scope,
        { resource, format, time_zone: 'UTC' },
        { failWrites: true },
      );
      return c.json(serializeExport(e), 202);
    })
    .openapi(stallClock, async (c) => {
      const scope = await sandboxScope(c);
      const clock = await findOwnTestClock(orm.em.fork(), c.req.valid('param').id, scope);
      // An absent body takes the default quiet timeout.
      const body = await optionalJsonBody(c, StallBody);
      return c.json(serializeTestClock(await stallTestClock(temporal.client, clock, body.quiet_timeout)), 200);
    });
}
