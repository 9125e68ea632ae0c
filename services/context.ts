/**
 * What a service may reach outside its arguments, in one object: the database, Temporal (a client and the task
 * queues workflows start on), each mode's payment processor, the signed customer links, the mailer, the clock and a
 * logger. One composition function builds it per process (services/compose.ts; worker.ts, export-worker.ts,
 * api/server.ts and dev/start.ts all call it); tests build one with the processors they want
 * (composeServiceContext({ processors: ... })). Services take it, or the part of it they use
 * (`Pick<ServiceContext, 'orm' | 'temporal'>`), instead of positional dependency lists.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';

import type { CustomerLinks } from '../domain/customer-links.ts';
import type { Logger } from '../logger.ts';
import type { Mailer } from './email/mailer.ts';
import type { Processors } from './processors/index.ts';

/** Where workflows are started and messaged from. */
export interface TemporalContext {
  client: Client;
  /** The live queue (config.taskQueue): every workflow not bound to a test clock. */
  taskQueue: string;
  /** The test clocks' queue (config.clockTaskQueue, `<taskQueue>-clocks` by default): services/test-clocks/binding.ts. */
  clockTaskQueue: string;
}

/**
 * Where a service starts a workflow: the process's client and live queue (`context.temporal`), or a running activity's
 * own (activities/index.ts; the queue maps to the clock queue for work on a test clock, services/test-clocks/binding.ts).
 * `Pick<ServiceContext, 'temporal'>` is one.
 */
export interface WorkflowStartContext {
  temporal: Pick<TemporalContext, 'client' | 'taskQueue'>;
}

/** "Now" for services: the wall clock, or a test clock's time inside an activity on one (services/test-clocks/now.ts). */
export interface ServiceClock {
  now(): Date;
}

export interface ServiceContext {
  orm: MikroORM;
  temporal: TemporalContext;
  /** Each mode's processor, built once per process from the configuration (services/processors/index.ts). */
  processors: Processors;
  /** Signs the links customers follow from emails and pages (billing details, portal, invoice PDFs). */
  links: CustomerLinks;
  /** Where customer and merchant emails go (SMTP, or .eml files in development). */
  mailer: Mailer;
  clock: ServiceClock;
  logger: Logger;
}
