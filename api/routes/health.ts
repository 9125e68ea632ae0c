import { createRoute, z } from '@hono/zod-openapi';

import { healthCheck } from '../../services/platform/health-check.ts';
import type { AppDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';

const Check = z.object({ ok: z.boolean(), latency_ms: z.number(), error: z.string().optional() });
const HealthSchema = z
  .object({ status: z.enum(['ok', 'degraded']), database: Check, temporal: Check })
  .openapi('Health');

const health = createRoute({
  method: 'get',
  path: '/',
  tags: ['Operations'],
  // Public: probes call it without credentials.
  security: [],
  summary: 'Database and Temporal reachability',
  responses: {
    200: { description: 'Both reachable', content: { 'application/json': { schema: HealthSchema } } },
    503: {
      description: 'One is not: `status` is `degraded` and the one down has `ok: false` and its error',
      content: {
        'application/json': {
          schema: HealthSchema,
          example: {
            status: 'degraded',
            database: { ok: false, latency_ms: 2, error: 'connect ECONNREFUSED 10.0.0.5:5432' },
            temporal: { ok: true, latency_ms: 3 },
          },
        },
      },
    },
  },
});

export function healthApp({
  context: {
    orm,
    temporal: { client: temporal },
  },
}: AppDeps) {
  return newOpenApiApp().openapi(health, async (c) => {
    const [database, temporalCheck] = await Promise.all([
      healthCheck(() => orm.em.fork().execute('select 1')),
      // With the check's deadline: a Temporal that is down would otherwise keep the client retrying the call in the background for ~20 s.
      healthCheck(() =>
        temporal.connection.withDeadline(Date.now() + 3_000, () =>
          temporal.connection.workflowService.getSystemInfo({}),
        ),
      ),
    ]);
    const ok = database.ok && temporalCheck.ok;
    return c.json({ status: ok ? 'ok' : 'degraded', database, temporal: temporalCheck } as const, ok ? 200 : 503);
  });
}
