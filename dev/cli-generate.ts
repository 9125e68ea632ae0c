/**
 * `npm run cli:generate`: writes cli/operations.json, the CLI's resource commands,
 * from the OpenAPI document the app serves at GET /openapi.json (built in-process,
 * no database needed). test/cli.test.ts checks that the snapshot matches.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

import { createApp } from '../api/app.ts';
import { deriveOperations } from '../cli/operations.ts';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';

export const operationsPath = fileURLToPath(new URL('../cli/operations.json', import.meta.url));

export async function currentOperationsJson(): Promise<string> {
  const app = createApp({
    orm: {} as never,
    temporal: {} as never,
    config: loadConfig({ NODE_ENV: 'test' }),
    logger: createLogger('silent'),
  });
  const doc = (await (await app.request('/openapi.json')).json()) as Record<string, unknown>;
  return `${JSON.stringify(deriveOperations(doc), null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(operationsPath, await currentOperationsJson());
  console.log(`wrote ${operationsPath}`);
}
