/**
 * The TypeScript SDK: a typed client for the whole API, generated from the engine's
 * OpenAPI document (types in sdk/openapi.ts by openapi-typescript, calls by
 * openapi-fetch). The dashboard uses the same client.
 *
 *   import { createBillingClient } from 'billing-engine/client';
 *   const billing = createBillingClient({ baseUrl: 'https://billing.example.com', apiKey: process.env.BILLING_KEY });
 *   const { data, error } = await billing.GET('/v1/customers', { params: { query: { limit: 10 } } });
 *   // data is typed from the OpenAPI document; error is `{ error, message }`.
 */
import createClient, { type ClientOptions } from 'openapi-fetch';

import type { components, paths } from './openapi.ts';

export type { components, paths } from './openapi.ts';
export type Schemas = components['schemas'];

export interface BillingClientOptions extends ClientOptions {
  /** An API key (sk_test_… / sk_live_…) or an access token; omit it to use the dashboard's cookie session. */
  apiKey?: string;
  /** With a user's access token: work in the sandbox. */
  sandbox?: boolean;
}

export function createBillingClient({ apiKey, sandbox, headers, ...options }: BillingClientOptions = {}) {
  return createClient<paths>({
    ...options,
    headers: {
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
      ...(sandbox === undefined ? {} : { 'x-sandbox-mode': String(sandbox) }),
      ...(headers as Record<string, string> | undefined),
    },
  });
}

export type BillingClient = ReturnType<typeof createBillingClient>;
