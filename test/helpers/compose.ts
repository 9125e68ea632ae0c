import fs from 'node:fs';

import { parse } from 'yaml';

/**
 * What Docker Compose does with docker-compose.yml before it starts anything, for the tests that run
 * its services without a Docker engine (test/compose-native.test.ts): read `.env` (dotenv lines), parse
 * the YAML with its merge keys (`<<: *engine-env`), and interpolate every string value from those
 * variables by the Compose specification's rules:
 *   $$ → $   ${VAR} / $VAR   ${VAR:-default} ${VAR-default}   ${VAR:?error} ${VAR?error}   ${VAR:+alt} ${VAR+alt}
 * The `:` forms treat an empty value as unset. A `?` whose variable is missing is an error, reported as
 * Compose reports it ("required variable X is missing a value: <error>"), and Compose then starts nothing.
 */

/** `.env` as Compose reads it: KEY=VALUE lines, `#` comments, optional `export `, optional quotes. */
export function readDotenv(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) throw new Error(`.env line ${index + 1} is not KEY=VALUE: ${raw}`);
    let value = match[2]!;
    const quoted = /^(['"])(.*)\1$/.exec(value);
    if (quoted) value = quoted[2]!;
    else if (/\s#/.test(value)) value = value.slice(0, value.search(/\s#/)).trimEnd();
    vars[match[1]!] = value;
  }
  return vars;
}

export interface Interpolated<T> {
  value: T;
  /** One line per `${VAR:?error}` whose variable is missing, as Compose prints it. */
  errors: string[];
}

const reference = /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

function interpolateString(
  text: string,
  vars: Record<string, string | undefined>,
  where: string,
  errors: string[],
): string {
  return text.replace(
    reference,
    (
      _match,
      dollar: string | undefined,
      braced: string | undefined,
      colon: string | undefined,
      op: string | undefined,
      arg: string | undefined,
      bare: string | undefined,
    ) => {
      if (dollar) return '$';
      const name = (braced ?? bare)!;
      const value = vars[name];
      const missing = value === undefined || (colon === ':' && value === '');
      switch (op) {
        case '-':
          return missing ? arg! : value!;
        case '+':
          return missing ? '' : arg!;
        case '?':
          if (missing)
            errors.push(`error while interpolating ${where}: required variable ${name} is missing a value: ${arg}`);
          return value ?? '';
        default:
          // Compose warns ("The X variable is not set. Defaulting to a blank string.") and goes on.
          return value ?? '';
      }
    },
  );
}

/** Interpolates every string value (not the keys) of a parsed document. */
export function interpolate<T>(document: T, vars: Record<string, string | undefined>): Interpolated<T> {
  const errors: string[] = [];
  const walk = (node: unknown, where: string): unknown => {
    if (typeof node === 'string') return interpolateString(node, vars, where, errors);
    if (Array.isArray(node)) return node.map((item, i) => walk(item, `${where}[${i}]`));
    if (node && typeof node === 'object')
      return Object.fromEntries(
        Object.entries(node).map(([key, value]) => [key, walk(value, where ? `${where}.${key}` : key)]),
      );
    return node;
  };
  return { value: walk(document, '') as T, errors };
}

export interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  entrypoint?: string[];
  restart?: string;
  environment?: Record<string, string | number | boolean>;
  depends_on?: Record<string, { condition: 'service_started' | 'service_healthy' | 'service_completed_successfully' }>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number; start_period?: string };
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** docker-compose.yml as `docker compose up` sees it with these variables (the contents of `.env`). */
export function loadCompose(
  vars: Record<string, string | undefined>,
  file = 'docker-compose.yml',
): Interpolated<ComposeFile> {
  return interpolate(parse(fs.readFileSync(file, 'utf8'), { merge: true }) as ComposeFile, vars);
}

/** A Compose duration (`5s`, `2m`, `1m30s`, `500ms`) in milliseconds. */
export function durationMs(text: string | undefined, fallback: string): number {
  const source = text ?? fallback;
  let total = 0;
  for (const [, amount, unit] of source.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g))
    total += Number(amount) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h'];
  if (!total && source !== '0s') throw new Error(`unreadable duration: ${source}`);
  return total;
}

/** A service's environment as the container gets it: every value a string (Compose stringifies numbers and booleans). */
export function serviceEnvironment(service: ComposeService): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, String(value)]));
}
