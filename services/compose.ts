/**
 * The one composition of a process's services (services/context.ts): worker.ts, export-worker.ts, api/server.ts and
 * dev/start.ts each open their database and Temporal connections, then call this; tests call it too, with the
 * processors (or mailer) they want in place of the configured ones.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';

import type { Config } from '../config.ts';
import { createCustomerLinks, type CustomerLinks } from '../domain/customer-links.ts';
import type { Logger } from '../logger.ts';
import type { ServiceClock, ServiceContext } from './context.ts';
import { createMailer, type Mailer } from './email/mailer.ts';
import { useAvailabilityOverride } from './money/availability-delay.ts';
import { createProcessors, type Processors } from './processors/index.ts';
import { currentTime } from './test-clocks/now.ts';
import { useClockRegistry } from './test-clocks/registry.ts';

/** The configuration the composition reads. */
export type ComposeConfig = Pick<
  Config,
  | 'taskQueue'
  | 'clockTaskQueue'
  | 'processors'
  | 'publicUrl'
  | 'auth'
  | 'smtpUrl'
  | 'mailFrom'
  | 'dataDir'
  | 'balanceAvailabilityDelaySeconds'
>;

export interface ComposeParts {
  orm: MikroORM;
  /** A Temporal client: the API's (request-path retries), or one on the worker's NativeConnection. */
  client: Client;
  logger: Logger;
  /** Built from config.processors when unset; tests give their own (a crashing or gated processor). */
  processors?: Processors;
  /** createMailer(config) when unset (SMTP_URL, else .eml files in DATA_DIR/mail). */
  mailer?: Mailer;
  links?: CustomerLinks;
  clock?: ServiceClock;
}

/** The clock of every process: the wall clock, or the test clock an activity runs on. */
export const serviceClock: ServiceClock = { now: currentTime };

export function composeServiceContext(config: ComposeConfig, parts: ComposeParts): ServiceContext {
  const { orm } = parts;
  // The ledger's pending delay over the processors' (BALANCE_AVAILABILITY_DELAY_SECONDS), for the whole process.
  useAvailabilityOverride(config.balanceAvailabilityDelaySeconds);
  // Test clocks' registry writes (bindToClock) go to this database (services/test-clocks/registry.ts).
  useClockRegistry(orm);
  // The processors and the mailer are built at their first use: a process that never charges nor mails (an exports
  // worker) builds neither, and loads neither Stripe's SDK nor nodemailer (services/processors/stripe.ts, services/email/mailer.ts).
  let processors = parts.processors;
  let mailer = parts.mailer;
  return {
    orm,
    temporal: { client: parts.client, taskQueue: config.taskQueue, clockTaskQueue: config.clockTaskQueue },
    get processors() {
      return (processors ??= createProcessors(config.processors, () => orm.em.fork()));
    },
    links: parts.links ?? createCustomerLinks({ publicUrl: config.publicUrl, secret: config.auth.secret }),
    get mailer() {
      return (mailer ??= createMailer(config));
    },
    clock: parts.clock ?? serviceClock,
    logger: parts.logger,
  };
}
