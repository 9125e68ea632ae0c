/**
 * A ServiceContext for tests and test processes (fixtures), composed as the entry points compose theirs
 * (services/compose.ts), with what a test wants in place of the configuration's: one processor for both modes
 * (a crashing or gated one), a mailer to a capture server, its own task queue.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';

import { loadConfig } from '../../config.ts';
import { createLogger } from '../../logger.ts';
import { type ComposeConfig, composeServiceContext } from '../../services/compose.ts';
import type { ServiceContext } from '../../services/context.ts';
import type { Mailer } from '../../services/email/mailer.ts';
import { createProcessors, type Processors, sandboxOnlyConfig } from '../../services/processors/index.ts';
import type { PaymentProcessor } from '../../services/processors/types.ts';

export function testServiceContext(parts: {
  orm: MikroORM;
  /** A client, or the worker's connection to build one on (namespace `default`). */
  client?: Client;
  connection?: NativeConnection;
  taskQueue: string;
  mailer: Mailer;
  /** One processor for both modes, over `processors`. */
  processor?: PaymentProcessor;
  processors?: Processors;
  /** Configuration over the test defaults (publicUrl, auth.secret, processors...). */
  config?: Partial<ComposeConfig>;
}): ServiceContext {
  const config: ComposeConfig = {
    ...loadConfig({ NODE_ENV: 'test' }),
    clockTaskQueue: `${parts.taskQueue}-clocks`,
    ...parts.config,
    taskQueue: parts.taskQueue,
  };
  const client = parts.client ?? new Client({ connection: parts.connection!, namespace: 'default' });
  const em = () => parts.orm.em.fork();
  return composeServiceContext(config, {
    orm: parts.orm,
    client,
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    mailer: parts.mailer,
    processors: parts.processor
      ? createProcessors(sandboxOnlyConfig, em, { both: parts.processor })
      : (parts.processors ?? createProcessors(config.processors, em)),
  });
}
