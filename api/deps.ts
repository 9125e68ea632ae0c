import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/** What the HTTP edge needs: projections to read, Temporal to command, configuration and a logger. */
export interface ApiDeps {
  orm: MikroORM;
  temporal: Client;
  config: Config;
  logger: Logger;
}
