import type { MikroORM } from '@mikro-orm/postgresql';
import type { Tracer } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';

import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ServiceContext } from '../services/context.ts';
import type { ExportStorage } from '../services/exports/storage.ts';
import type { Processors } from '../services/processors/index.ts';
import type { TaxCalculator } from '../services/taxes/calculator.ts';

/** What the HTTP edge needs: projections to read, Temporal to command, configuration and a logger. */
export interface ApiDeps {
  orm: MikroORM;
  temporal: Client;
  config: Config;
  logger: Logger;
  /**
   * The process's services, composed by the entry point (services/compose.ts; api/server.ts, dev/start.ts). Unset
   * (tests): createApp composes them from orm, temporal, logger, `processors` and the configuration.
   */
  context?: ServiceContext;
  /** Each mode's processor (services/processors/index.ts): the context's; from `config.processors` when neither is set (tests give their own). */
  processors?: Processors;
  /** Heartbeat period of the server-sent-event streams (GET /v1/events/stream, /v1/logs/stream); 15 s when unset. */
  sseHeartbeatMs?: number;
  /** Where export files are read from; DATA_DIR/exports when unset. */
  exportStorage?: ExportStorage;
  /** The tax calculator invoices and previews ask (services/taxes/calculator.ts); the built-in rates when unset. */
  taxCalculator?: TaxCalculator;
  /** Tracing is on (services/observability/tracing.ts): a span per request. Unset: no tracing middleware at all. */
  tracer?: Tracer;
}

/**
 * What the routes get from createApp: the given dependencies with the process's services composed. Routes read their
 * database, Temporal, processors, links, mailer and logger from `context` (one source), and settings from `config`.
 */
export type AppDeps = ApiDeps & { context: ServiceContext; processors: Processors };

/** An entry point's ApiDeps from the services it composed (services/compose.ts). */
export function apiDepsOf(
  context: ServiceContext,
  config: Config,
  extras: Omit<ApiDeps, 'orm' | 'temporal' | 'logger' | 'config' | 'context' | 'processors'> = {},
): ApiDeps {
  return {
    ...extras,
    orm: context.orm,
    temporal: context.temporal.client,
    logger: context.logger,
    processors: context.processors,
    config,
    context,
  };
}
