import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { startApiServer, type RunningApi } from '../../api/server.ts';
import { freePort } from '../../dev/processes.ts';
import { createLogger } from '../../logger.ts';
import type { TestEngine } from './engine.ts';

/** Debian's chromium (CHROMIUM_PATH to use another Chromium or Chrome): playwright-core downloads no browser. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A headless chromium for the browser tests, or an error saying how to install one. */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(chromiumPath)) {
    throw new Error(
      `Chromium is not installed at ${chromiumPath}. The browser tests drive Debian's chromium with playwright-core and download no browser: ` +
        'install it with `apt-get install -y chromium` (as root; .ci/run does this), or set CHROMIUM_PATH to a Chromium or Chrome binary.',
    );
  }
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * The test engine's app served over real HTTP on a free local port, with its public URL
 * (links in pages and emails) pointing there, as a browser reaches it.
 */
export async function servePublicApi(engine: TestEngine): Promise<{ api: RunningApi; baseUrl: string }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const api = await startApiServer({ orm: engine.db.orm, temporal: engine.env.client, config: { ...engine.config, publicUrl: baseUrl }, logger: createLogger('silent') }, port, '127.0.0.1');
  return { api, baseUrl };
}
