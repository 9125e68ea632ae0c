import type { MikroORM } from '@mikro-orm/postgresql';
import type { Tracer } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';

import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ExportStorage } from '../services/exports/storage.ts';
import type { Processors } from '../services/processors/index.ts';
import type { PaymentProcessor } from '../services/processors/types.ts';
import type { TaxCalculator } from '../services/taxes/calculator.ts';

/** What the HTTP edge needs: projections to read, Temporal to command, configuration and a logger. */
export interface ApiDeps {
  orm: MikroORM;
  temporal: Client;
  config: Config;
  logger: Logger;
  /** Each mode's processor, built once by the entry point (services/processors/index.ts); from `config.processors` when unset. */
  processors?: Processors;
  /** Heartbeat period of the server-sent-event streams (GET /v1/events/stream, /v1/logs/stream); 15 s when unset. */
  sseHeartbeatMs?: number;
  /** One processor for both modes, over `processors` (tests). */
  processor?: PaymentProcessor;
  /** Where export files are read from; DATA_DIR/exports when unset. */
  exportStorage?: ExportStorage;
  /** The tax calculator invoices and previews ask (services/taxes/calculator.ts); the built-in rates when unset. */
  taxCalculator?: TaxCalculator;
  /** Tracing is on (services/observability/tracing.ts): a span per request. Unset: no tracing middleware at all. */
  tracer?: Tracer;
}
