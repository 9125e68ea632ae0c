/**
 * The TypeScript SDK's types (sdk/openapi.ts, openapi-typescript) are what the served
 * OpenAPI document gives: a renamed field must be regenerated (npm run sdk:generate),
 * and then breaks the dashboard's type check rather than a page.
 */
import fs from 'node:fs';

import { describe, expect, it } from 'vitest';

import { currentOpenApiDocument, sdkTypesFor, sdkTypesPath } from '../dev/sdk-generate.ts';
import { createBillingClient } from '../sdk/client.ts';

describe('the TypeScript SDK', () => {
  it('sdk/openapi.ts matches GET /openapi.json (npm run sdk:generate)', async () => {
    const doc = await currentOpenApiDocument();
    expect(fs.readFileSync(sdkTypesPath, 'utf8')).toBe(await sdkTypesFor(doc));
    expect(Object.keys(doc.paths as object)).toEqual(
      expect.arrayContaining(['/v1/customers', '/v1/auth/browser_session']),
    );
  });

  it('the client sends the API key and mode, and types the answer', async () => {
    const seen: Request[] = [];
    const client = createBillingClient({
      baseUrl: 'https://billing.test',
      apiKey: 'sk_test_abc',
      fetch: async (request: Request) => {
        seen.push(request);
        return new Response(JSON.stringify({ data: [], has_more: false, next_cursor: null }), {
          headers: { 'content-type': 'application/json' },
        });
      },
    });
    const { data, error } = await client.GET('/v1/customers', { params: { query: { limit: 5 } } });
    expect(error).toBeUndefined();
    expect(data?.data).toEqual([]);
    expect(seen[0]!.url).toBe('https://billing.test/v1/customers?limit=5');
    expect(seen[0]!.headers.get('authorization')).toBe('Bearer sk_test_abc');
  });
});
