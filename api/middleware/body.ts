import type { Context, MiddlewareHandler } from 'hono';
import type { z } from 'zod';

import { ApiError } from '../../domain/errors.ts';

declare module 'hono' {
  interface ContextVariableMap {
    /** True when the request came as `application/x-www-form-urlencoded` (now rewritten to JSON whose leaves are strings). */
    formBody: boolean | undefined;
  }
}

const methodsWithBody = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const maxDepth = 32;

/**
 * Why a parsed JSON value is refused, or null: a NUL character anywhere (PostgreSQL
 * text cannot hold one) or nesting deeper than any endpoint takes. Iterative, so a
 * hostile body of ten thousand brackets cannot overflow the stack.
 */
/** A high surrogate without its low half, or a low one without its high half (String#isWellFormed, before es2024). */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
function hasLoneSurrogate(text: string): boolean {
  return loneSurrogate.test(text);
}

function bodyProblem(root: unknown): string | null {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (depth > maxDepth) return `JSON nested deeper than ${maxDepth} levels.`;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return 'Strings may not contain NUL characters.';
      // "\ud800" alone is valid JSON but not Unicode: PostgreSQL (UTF-8) cannot store it.
      if (hasLoneSurrogate(value))
        return 'Strings may not contain lone UTF-16 surrogates (\\ud800-\\udfff without their pair).';
    } else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        if (key.includes('\u0000')) return 'Strings may not contain NUL characters.';
        if (hasLoneSurrogate(key))
          return 'Strings may not contain lone UTF-16 surrogates (\\ud800-\\udfff without their pair).';
        stack.push([inner, depth + 1]);
      }
    }
  }
  return null;
}

type FormValue = string | FormValue[] | { [key: string]: FormValue };

function decode(part: string): string {
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    throw new ApiError('invalid_request', `Malformed form body: bad percent-encoding in "${part.slice(0, 40)}".`);
  }
}

/** `metadata[order][x]` → ['metadata', 'order', 'x']; `events[]` → ['events', '']. */
function keyPath(key: string): string[] {
  const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!match)
    throw new ApiError(
      'invalid_request',
      `Malformed form body: bad key "${key.slice(0, 60)}" (use name, name[key] or name[]).`,
    );
  const path = [match[1]!];
  for (const segment of match[2]!.matchAll(/\[([^[\]]*)\]/g)) path.push(segment[1]!);
  if (path.length > maxDepth) throw new ApiError('invalid_request', `Form keys nested deeper than ${maxDepth} levels.`);
  return path;
}

/**
 * A form body in Stripe's bracket notation as a nested value whose leaves are strings:
 * `a=1` → {a:"1"}; `metadata[order]=42` → {metadata:{order:"42"}}; `events[]=x&events[]=y`
 * or `events[0]=x&events[1]=y` → {events:["x","y"]}; `items[0][plan]=p` → {items:[{plan:"p"}]}.
 * Strict: a key given twice (`a=1&a=2`), a key that is both a value and a container
 * (`a=1&a[b]=2`), an array index that skips ahead (`a[5]` before `a[0]`), `[]` anywhere but
 * last, bad percent-encoding or a pair without a key is malformed (400).
 */
export function parseForm(text: string): Record<string, FormValue> {
  const root: Record<string, FormValue> = Object.create(null);
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const rawKey = equals === -1 ? pair : pair.slice(0, equals);
    const value = equals === -1 ? '' : decode(pair.slice(equals + 1));
    const key = decode(rawKey);
    if (key === '') throw new ApiError('invalid_request', 'Malformed form body: a pair without a key.');
    const path = keyPath(key);
    let container: Record<string, FormValue> | FormValue[] = root;
    for (let i = 0; i < path.length; i++) {
      const segment = path[i]!;
      const last = i === path.length - 1;
      const conflict = () =>
        new ApiError('invalid_request', `Malformed form body: "${key.slice(0, 60)}" conflicts with another key.`);
      let slot: string | number = segment;
      if (Array.isArray(container)) {
        if (segment === '') {
          if (!last)
            throw new ApiError('invalid_request', `Malformed form body: "[]" must end the key "${key.slice(0, 60)}".`);
          slot = container.length;
        } else if (/^\d{1,4}$/.test(segment) && Number(segment) <= container.length) {
          slot = Number(segment);
        } else {
          throw new ApiError(
            'invalid_request',
            `Malformed form body: "${key.slice(0, 60)}": array indexes count up from 0 without gaps.`,
          );
        }
      } else if (segment === '') {
        throw new ApiError('invalid_request', `Malformed form body: "${key.slice(0, 60)}": "[]" needs a list.`);
      }
      const existing: FormValue | undefined = Array.isArray(container)
        ? container[slot as number]
        : Object.hasOwn(container, slot)
          ? container[slot as string]
          : undefined;
      if (last) {
        if (existing !== undefined)
          throw new ApiError(
            'invalid_request',
            `Malformed form body: "${key.slice(0, 60)}" is given more than once (use name[] for a list).`,
          );
        (container as Record<string | number, FormValue>)[slot] = value;
        break;
      }
      if (typeof existing === 'string') throw conflict();
      const next = path[i + 1]!;
      const wantsArray = next === '' || /^\d+$/.test(next);
      let child = existing;
      if (child === undefined) {
        child = wantsArray ? [] : (Object.create(null) as Record<string, FormValue>);
        (container as Record<string | number, FormValue>)[slot] = child;
      } else if (Array.isArray(child) !== wantsArray) {
        throw conflict();
      }
      container = child as Record<string, FormValue> | FormValue[];
    }
  }
  return root;
}

type Def = { type: string } & Record<string, unknown>;
const defOf = (schema: unknown): Def | undefined => (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;

/**
 * A form's strings turned into what `schema` expects, so one strict schema serves
 * JSON and forms: "42" → 42 where it wants a number, "true"/"false" → booleans, "" →
 * null where it takes null, a list by index → an object where it wants a map. Anything
 * else is left as it is, and the schema then refuses it with the usual message.
 * Never applied to JSON bodies: there a string "100" for an amount stays invalid.
 */
export function coerceFormValue(schema: unknown, value: unknown): unknown {
  const def = defOf(schema);
  if (!def) return value;
  switch (def.type) {
    case 'optional':
    case 'default':
    case 'prefault':
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      return coerceFormValue(def.innerType, value);
    case 'nullable':
      return value === '' ? null : coerceFormValue(def.innerType, value);
    case 'pipe':
      return coerceFormValue(def.in, value);
    case 'lazy':
      return coerceFormValue((def.getter as () => unknown)(), value);
    case 'number':
      return typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    case 'boolean':
      return value === 'true' ? true : value === 'false' ? false : value;
    case 'literal': {
      const match = (def.values as unknown[]).find(
        (literal) => typeof literal !== 'string' && String(literal) === value,
      );
      return match ?? value;
    }
    case 'object': {
      const object = asObject(value);
      if (!object) return value;
      const shape = def.shape as Record<string, unknown>;
      return Object.fromEntries(
        Object.entries(object).map(([key, inner]) => [
          key,
          Object.hasOwn(shape, key) ? coerceFormValue(shape[key], inner) : inner,
        ]),
      );
    }
    case 'record': {
      const object = asObject(value);
      if (!object) return value;
      return Object.fromEntries(
        Object.entries(object).map(([key, inner]) => [key, coerceFormValue(def.valueType, inner)]),
      );
    }
    case 'array':
      return Array.isArray(value) ? value.map((item) => coerceFormValue(def.element, item)) : value;
    case 'union': {
      for (const option of def.options as z.ZodType[]) {
        const candidate = coerceFormValue(option, value);
        if (option.safeParse(candidate).success) return candidate;
      }
      return value;
    }
    case 'intersection':
      return coerceFormValue(def.right, coerceFormValue(def.left, value));
    default:
      return value;
  }
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  if (Array.isArray(value)) return Object.fromEntries(value.map((item, index) => [String(index), item]));
  if (value !== null && typeof value === 'object') return value as Record<string, unknown>;
  return undefined;
}

/** Makes the rest of the pipeline (validators, Idempotency-Key hashing, handlers) read `value` as the JSON body. */
function replaceWithJson(c: Context, value: unknown) {
  const headers = new Headers(c.req.raw.headers);
  headers.set('content-type', 'application/json');
  headers.delete('content-length');
  c.req.raw = new Request(c.req.raw.url, { method: c.req.raw.method, headers, body: JSON.stringify(value) });
  c.req.bodyCache = {};
}

/**
 * Every request body must be JSON or `application/x-www-form-urlencoded` (an empty
 * body is allowed: endpoints whose parameters are all optional; not on a PATCH, which
 * must name what it changes). Refuses other
 * content types with 415, malformed JSON or forms with 400, and NUL characters or
 * absurd nesting with 400, all before any handler runs, so nothing changes.
 *
 * A form is parsed once here (see parseForm) and the request is rewritten into JSON
 * whose leaves are strings, with `formBody` set; the route then turns the strings
 * into the numbers and booleans its schema expects (formCoercion, wired into every
 * route by newOpenApiApp, and optionalJsonBody), so the schemas stay strict for JSON.
 */
/** Every path, /v1 or not (GET /invoices, /pay, /billing): a NUL in the URL is a 400, never a database error. */
export function urlGuard(): MiddlewareHandler {
  return async (c, next) => {
    if (/%00|\u0000/i.test(c.req.url)) throw new ApiError('invalid_request', 'The URL may not contain NUL characters.');
    return next();
  };
}

export function jsonBodies(): MiddlewareHandler {
  return async (c, next) => {
    if (/%00|\u0000/i.test(c.req.url)) throw new ApiError('invalid_request', 'The URL may not contain NUL characters.');
    if (!methodsWithBody.has(c.req.method)) return next();
    const text = await c.req.text();
    const [essence, ...params] = (c.req.header('content-type') ?? '')
      .split(';')
      .map((part) => part.trim().toLowerCase());
    const type = essence!;
    // A PATCH changes what its body names: without one it would answer 200 having changed nothing, which reads as
    // success to a client that lost its body on the way. `{}` stays a valid (empty) update, as SPEC.md's bodies are all optional.
    if (c.req.method === 'PATCH' && text.trim() === '') {
      throw new ApiError(
        'invalid_request',
        'This PATCH has no body: send a JSON object (or a form) with the fields to change; fields left out stay as they are.',
      );
    }
    if (text.trim() === '' && type !== 'application/x-www-form-urlencoded') return next();
    if (type === 'application/x-www-form-urlencoded') {
      // An empty form (curl -d '') is a form without fields: `{}` to the routes.
      const charset = params
        .find((param) => param.startsWith('charset='))
        ?.slice('charset='.length)
        .replaceAll('"', '');
      if (charset && charset !== 'utf-8' && charset !== 'utf8')
        throw new ApiError('unsupported_media_type', `Form bodies must be UTF-8, got charset ${charset}.`);
      const form = parseForm(text.trim());
      const problem = bodyProblem(form);
      if (problem) throw new ApiError('invalid_request', problem);
      replaceWithJson(c, form);
      c.set('formBody', true);
      return next();
    }
    if (type !== 'application/json' && !type.endsWith('+json')) {
      throw new ApiError(
        'unsupported_media_type',
        `Content-Type must be application/json or application/x-www-form-urlencoded, got "${type || 'none'}".`,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new ApiError('invalid_request', `Malformed JSON body: ${(error as Error).message}`);
    }
    const problem = bodyProblem(parsed);
    if (problem) throw new ApiError('invalid_request', problem);
    return next();
  };
}

/**
 * Route middleware: when the body came as a form, coerces its strings guided by the
 * route's JSON body schema before the route's validator reads it.
 */
export function formCoercion(schema: z.ZodType): MiddlewareHandler {
  return async (c, next) => {
    if (c.get('formBody')) replaceWithJson(c, coerceFormValue(schema, await c.req.json()));
    return next();
  };
}
