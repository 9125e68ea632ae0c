import path from 'node:path';

/**
 * Configuration from the environment, read in one place. Every variable is
 * documented in the README; defaults are for local development.
 */
export interface Config {
  env: 'development' | 'test' | 'production';
  port: number;
  /** Base URL that links in emails and pages point at. */
  publicUrl: string;
  /** Where `npm start` keeps the embedded PostgreSQL and Temporal data. */
  dataDir: string;
  /** Unset: `npm start` runs an embedded PostgreSQL. */
  databaseUrl: string | undefined;
  /** Unset: `npm start` runs a Temporal dev server. */
  temporalAddress: string | undefined;
  temporalNamespace: string;
  taskQueue: string;
  logLevel: string;
  /** Largest request body the API reads, in bytes. */
  bodyLimitBytes: number;
}

function integer(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

export function loadConfig(env = process.env): Config {
  const mode = env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development';
  const port = integer('PORT', 3000);
  return {
    env: mode,
    port,
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/$/, ''),
    dataDir: path.resolve(env.DATA_DIR ?? 'data'),
    databaseUrl: env.DATABASE_URL || undefined,
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: env.TEMPORAL_TASK_QUEUE ?? 'billing',
    logLevel: env.LOG_LEVEL ?? (mode === 'test' ? 'warn' : 'info'),
    bodyLimitBytes: integer('BODY_LIMIT_BYTES', 100 * 1024),
  };
}
