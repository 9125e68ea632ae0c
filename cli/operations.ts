/**
 * The resource commands of the CLI, derived from the API's OpenAPI document.
 * `npm run cli:generate` writes cli/operations.json from the app's document;
 * test/cli.test.ts fails when the snapshot and the live document differ.
 */

export interface FieldSpec {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
  required: boolean;
  description?: string;
}

export interface Operation {
  resource: string;
  action: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
  path: string;
  summary: string;
  pathParams: string[];
  query: FieldSpec[];
  body: FieldSpec[];
  /** Needs `--confirm <id>` in live mode. */
  destructive: boolean;
}

/** The resources the CLI exposes; everything else (auth, users, keys, settings, CLI plumbing) is not a resource command. */
export const cliResources = [
  'customers',
  'products',
  'plans',
  'subscriptions',
  'subscription-items',
  'invoices',
  'invoice-items',
  'credit-notes',
  'coupons',
  'promotion-codes',
  'tax-rates',
  'meters',
  'billing-alerts',
  'meter-events',
  'transactions',
  'payments',
  'payment-requests',
  'payouts',
  'bank-accounts',
  'payout-holds',
  'payout-settings',
  'webhooks',
  'events',
  'exports',
  'test-clocks',
] as const;

const destructiveActions = new Set(['cancel', 'refund', 'delete', 'void']);

type Json = Record<string, any>;

function deref(doc: Json, schema: Json | undefined): Json | undefined {
  let current = schema;
  for (let i = 0; current && '$ref' in current && i < 10; i++) {
    const parts = String(current.$ref).replace(/^#\//, '').split('/');
    current = parts.reduce<any>((node, part) => node?.[part], doc);
  }
  return current;
}

function fieldType(doc: Json, schema: Json | undefined): FieldSpec['type'] {
  const s = deref(doc, schema) ?? {};
  const variants: Json[] = s.anyOf ?? s.oneOf ?? [s];
  for (const v of variants.map((x) => deref(doc, x) ?? {})) {
    const t = Array.isArray(v.type) ? v.type.find((x: string) => x !== 'null') : v.type;
    if (t && t !== 'null') return t;
  }
  return 'string';
}

function objectFields(doc: Json, schema: Json | undefined): FieldSpec[] {
  const s = deref(doc, schema);
  if (!s) return [];
  const parts: Json[] = s.allOf ? s.allOf.map((x: Json) => deref(doc, x) ?? {}) : [s];
  const fields: FieldSpec[] = [];
  for (const part of parts) {
    const required = new Set<string>(part.required ?? []);
    for (const [name, prop] of Object.entries<Json>(part.properties ?? {})) {
      const resolved = deref(doc, prop) ?? {};
      fields.push({
        name,
        type: fieldType(doc, prop),
        required: required.has(name),
        ...(resolved.description ? { description: String(resolved.description).split('\n')[0] } : {}),
      });
    }
  }
  return fields;
}

/**
 * A sub-resource's verb when its path answers several methods (GET and POST /v1/customers/{id}/balance_transactions):
 * `list-balance-transactions` and `create-balance-transactions`, `get-…` with an id, `delete-…`. A path with one method
 * keeps the bare name (`subscriptions cancel`, `invoices pdf`).
 */
const subVerbs: Record<string, (last: string) => string> = {
  GET: (last) => (last.startsWith('{') ? 'get' : 'list'),
  POST: () => 'create',
  PATCH: () => 'update',
  PUT: () => 'update',
  DELETE: () => 'delete',
};

function actionOf(method: string, rest: string[], hasPatch: boolean, methods = 1): string | null {
  // A collection path with PATCH is a singleton (GET/PATCH /v1/payout_settings): get and update.
  if (rest.length === 0)
    return method === 'GET'
      ? hasPatch
        ? 'get'
        : 'list'
      : method === 'POST'
        ? 'create'
        : method === 'PATCH'
          ? 'update'
          : null;
  if (rest.length === 1) {
    // A literal segment is an action of the collection (GET /v1/transactions/search → `transactions search`).
    if (!rest[0]!.startsWith('{')) return method === 'GET' || method === 'POST' ? rest[0]!.replace(/_/g, '-') : null;
    if (method === 'GET') return 'get';
    if (method === 'PATCH') return 'update';
    if (method === 'POST') return hasPatch ? null : 'update';
    if (method === 'DELETE') return 'delete';
    return null;
  }
  if (methods === 1) return rest.slice(1).join('-').replace(/_/g, '-');
  const sub = rest
    .slice(1)
    .filter((segment) => !segment.startsWith('{'))
    .join('-')
    .replace(/_/g, '-');
  return `${subVerbs[method]?.(rest[rest.length - 1]!) ?? method.toLowerCase()}-${sub}`;
}

/** The operations of an OpenAPI 3.1 document, sorted, as the CLI builds commands from them. */
export function deriveOperations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    const match = /^\/(?:api\/)?v1\/([a-z_-]+)(\/.*)?$/.exec(path);
    if (!match) continue;
    let resource = match[1]!.replace(/_/g, '-');
    let rest = (match[2] ?? '').split('/').filter(Boolean);
    // Stripe's namespaced paths: /v1/billing/alerts is the resource billing-alerts.
    if (resource === 'billing' && rest[0]) [resource, rest] = [`billing-${rest[0].replace(/_/g, '-')}`, rest.slice(1)];
    if (!(cliResources as readonly string[]).includes(resource)) continue;
    if (rest[0] === 'stream') continue;
    for (const [verb, op] of Object.entries<Json>(item)) {
      const method = verb.toUpperCase() as Operation['method'];
      const methods = Object.keys(item).filter((key) => ['get', 'post', 'patch', 'put', 'delete'].includes(key)).length;
      const action = actionOf(method, rest, 'patch' in item, methods);
      if (!action) continue;
      const params: Json[] = (op.parameters ?? []).map((p: Json) => deref(doc, p) ?? p);
      const bodySchema = op.requestBody?.content?.['application/json']?.schema;
      out.push({
        resource,
        action,
        method,
        path,
        summary: String(op.summary ?? ''),
        pathParams: params.filter((p) => p.in === 'path').map((p) => String(p.name)),
        query: params
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: String(p.name), type: fieldType(doc, p.schema), required: Boolean(p.required) })),
        body: objectFields(doc, bodySchema),
        destructive: method === 'DELETE' || destructiveActions.has(action),
      });
    }
  }
  return out.sort((a, b) => a.resource.localeCompare(b.resource) || a.action.localeCompare(b.action));
}
