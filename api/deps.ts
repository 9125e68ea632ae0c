import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { PaymentProcessor } from '../services/processors/sandbox.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/** What the HTTP edge needs: projections to read, Temporal to command, configuration and a logger. */
export interface ApiDeps {
  orm: MikroORM;
  temporal: Client;
  config: Config;
  logger: Logger;
  /** The payment processor for direct payments; the sandbox one when unset. */
  processor?: PaymentProcessor;
}
