import type { z } from '@hono/zod-openapi';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createApp } from '../api/app.ts';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

/**
 * Issue #24: every request body in the OpenAPI document has one realistic example, the
 * body the interactive docs (/docs, Swagger UI) pre-fill for "Try it out". Each example
 * must be a body the API takes: it is checked against the JSON schema the document
 * publishes (what a client generator or Swagger UI sees) and against the route's own zod
 * schema (what the server's validator runs, refinements included).
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Doc = {
  paths: Record<
    string,
    Record<
      string,
      {
        requestBody?: {
          content: Record<
            string,
            { schema?: Record<string, unknown>; example?: unknown; examples?: Record<string, { value?: unknown }> }
          >;
        };
      }
    >
  >;
  components: { schemas: Record<string, Record<string, unknown>> };
};

async function documentAndApp() {
  const app = createApp({
    orm: {} as never,
    temporal: {} as never,
    config: loadConfig({ NODE_ENV: 'test' }),
    logger: createLogger('silent'),
  });
  const response = await app.request('/openapi.json');
  expect(response.status).toBe(200);
  return { app, doc: (await response.json()) as Doc };
}

/** The JSON Schema of a body, `$ref`s to components resolved one level (as Swagger UI reads the example). */
function resolve(doc: Doc, schema: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const ref = schema?.$ref;
  return typeof ref === 'string' ? doc.components.schemas[ref.replace('#/components/schemas/', '')] : schema;
}

/** The example a reader of the document is shown: the media type's, its named examples', or the schema's. */
function examplesOf(
  doc: Doc,
  media: { schema?: Record<string, unknown>; example?: unknown; examples?: Record<string, { value?: unknown }> },
): unknown[] {
  if (media.example !== undefined) return [media.example];
  if (media.examples && Object.keys(media.examples).length)
    return Object.values(media.examples).map((entry) => entry.value);
  const schema = resolve(doc, media.schema);
  if (schema?.example !== undefined) return [schema.example];
  if (Array.isArray(schema?.examples) && schema.examples.length) return schema.examples;
  return [];
}

function operationsWithBodies(doc: Doc) {
  const found: {
    method: string;
    path: string;
    content: Record<
      string,
      { schema?: Record<string, unknown>; example?: unknown; examples?: Record<string, { value?: unknown }> }
    >;
  }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of methods) {
      const operation = item[method];
      if (operation?.requestBody) found.push({ method, path, content: operation.requestBody.content });
    }
  }
  return found;
}

/** The zod schema each route validates its JSON body with, from the registry the document is generated from. */
function zodBodies(app: Awaited<ReturnType<typeof documentAndApp>>['app']) {
  const bodies = new Map<string, z.ZodType>();
  for (const definition of app.openAPIRegistry.definitions) {
    if (definition.type !== 'route') continue;
    const schema = (definition.route.request?.body?.content?.['application/json'] as { schema?: unknown } | undefined)
      ?.schema;
    if (schema && typeof schema === 'object' && '_zod' in schema)
      bodies.set(`${definition.route.method} ${definition.route.path}`, schema as z.ZodType);
  }
  return bodies;
}

describe('OpenAPI request body examples', () => {
  it('every operation with a request body has an example for each of its media types', async () => {
    const { doc } = await documentAndApp();
    const operations = operationsWithBodies(doc);
    // Sanity: the walk sees the document's bodies (48 when this test was written).
    expect(operations.length).toBeGreaterThanOrEqual(40);
    const missing = operations.flatMap(({ method, path, content }) =>
      Object.entries(content)
        .filter(([, media]) => examplesOf(doc, media).length === 0)
        .map(([type]) => `${method.toUpperCase()} ${path} (${type})`),
    );
    expect(missing).toEqual([]);
  });

  it('every example validates against the JSON schema the document publishes for it', async () => {
    const { doc } = await documentAndApp();
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    // The document is one schema resource: `#/components/schemas/...` references resolve inside it.
    ajv.addSchema(doc as object, 'openapi.json');
    const refused: string[] = [];
    for (const { method, path, content } of operationsWithBodies(doc)) {
      for (const [type, media] of Object.entries(content)) {
        const pointer = `#/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method}/requestBody/content/${type.replaceAll('/', '~1')}/schema`;
        const validate = ajv.compile({ $ref: `openapi.json${pointer}` });
        for (const example of examplesOf(doc, media)) {
          if (!validate(example))
            refused.push(`${method.toUpperCase()} ${path} (${type}): ${ajv.errorsText(validate.errors)}`);
        }
      }
    }
    expect(refused).toEqual([]);
  });

  it("every example passes the route's own zod validation (refinements included), as the API would take it", async () => {
    const { app, doc } = await documentAndApp();
    const bodies = zodBodies(app);
    const refused: string[] = [];
    let checked = 0;
    for (const { method, path, content } of operationsWithBodies(doc)) {
      const schema = bodies.get(`${method} ${path}`);
      expect(schema, `${method.toUpperCase()} ${path}: no zod body schema in the registry`).toBeDefined();
      for (const example of examplesOf(doc, content['application/json']!)) {
        checked++;
        const parsed = schema!.safeParse(example);
        if (!parsed.success)
          refused.push(
            `${method.toUpperCase()} ${path}: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
          );
      }
    }
    expect(checked).toBe(operationsWithBodies(doc).length);
    expect(refused).toEqual([]);
  });

  it("the subscription's example is a plain subscription billed now: no trial, no pause", async () => {
    const { doc } = await documentAndApp();
    const [example] = examplesOf(
      doc,
      doc.paths['/v1/subscriptions']!.post!.requestBody!.content['application/json']!,
    ) as Record<string, unknown>[];
    expect(example).toBeDefined();
    expect(Object.keys(example!).sort()).toEqual(['customer_id', 'plan']);
    expect(example!.customer_id).toMatch(/^cus_[0-9a-z]{26}$/);
    expect(example!.plan).toMatch(/^plan_[0-9a-z]{26}$/);
  });

  it('the checks catch a bad example: one the schema refuses fails both validations', async () => {
    const { app, doc } = await documentAndApp();
    const ajv = addFormats(new Ajv2020({ strict: false }));
    ajv.addSchema(doc as object, 'openapi.json');
    const validate = ajv.compile({
      $ref: 'openapi.json#/paths/~1v1~1plans/post/requestBody/content/application~1json/schema',
    });
    const bad = { name: 'Pro monthly', amount: 20.5, currency: 'USD', interval: 'fortnight' };
    expect(validate(bad)).toBe(false);
    expect(zodBodies(app).get('post /v1/plans')!.safeParse(bad).success).toBe(false);
    // A body that only a refinement refuses (a recurring request without an interval).
    const request = { type: 'recurring', amount: 4900, currency: 'USD', customer_email: 'jane.doe@example.com' };
    expect(zodBodies(app).get('post /api/v1/payment-requests')!.safeParse(request).success).toBe(false);
  });

  describe('against the real API', () => {
    let engine: TestEngine;
    beforeAll(async () => {
      engine = await startTestEngine();
    });
    afterAll(() => engine?.close());

    /**
     * An example that names other records (an id like `cus_01jd…`) or a login would fail on a fresh
     * account for that reason alone. POST /v1/webhooks resolves its url's host (example.com) in DNS,
     * which a test machine without a network lacks; its example is still checked by the schemas above.
     */
    const selfContained = (method: string, path: string, example: unknown) =>
      !path.includes('{') &&
      !/^\/v1\/(auth|cli)\//.test(path) &&
      !(method === 'post' && path === '/v1/webhooks') &&
      !/"[a-z]+_[0-9a-z]{26}"/.test(JSON.stringify(example));

    it('every example that names no other record is taken as it stands (2xx) by a fresh sandbox account', async () => {
      const { doc } = await documentAndApp();
      const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
      const refused: string[] = [];
      const sent: string[] = [];
      for (const { method, path, content } of operationsWithBodies(doc)) {
        const [example] = examplesOf(doc, content['application/json']!);
        if (!selfContained(method, path, example)) continue;
        sent.push(`${method.toUpperCase()} ${path}`);
        // POST /v1/accounts signs up a new account: no credentials.
        const headers = path === '/v1/accounts' ? { authorization: '' } : sandbox;
        const response = await engine.call(method.toUpperCase(), path, example, headers);
        if (response.status >= 300)
          refused.push(`${method.toUpperCase()} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
      }
      // Sanity: most bodies are tried this way (customers, products, webhooks, settings, bank accounts, exports, ...).
      expect(sent.length, sent.join(', ')).toBeGreaterThanOrEqual(15);
      expect(refused).toEqual([]);
    });
  });
});
