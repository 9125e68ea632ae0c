import fs from 'node:fs';
import path from 'node:path';

import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

import { type RunningApi, startApiServer } from '../../api/server.ts';
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
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * The test engine's app served over real HTTP on a free local port, with its public URL
 * (links in pages and emails) pointing there, as a browser reaches it.
 */
export async function servePublicApi(engine: TestEngine): Promise<{ api: RunningApi; baseUrl: string }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const api = await startApiServer(
    {
      orm: engine.db.orm,
      temporal: engine.env.client,
      config: { ...engine.config, publicUrl: baseUrl },
      logger: createLogger('silent'),
    },
    port,
    '127.0.0.1',
  );
  return { api, baseUrl };
}

/**
 * A dashboard page as people and assistive tools meet it: screenshots at 1280 and 390 px wide
 * (test-results/<prefix>-<name>-desktop.png, -390.png), no sideways scroll at 390 px, and no serious or
 * critical axe-core violation at either width. The page is left at 1280 × 900.
 */
export async function checkPageLayout(page: Page, prefix: string, name: string): Promise<void> {
  const screenshots = path.resolve('test-results');
  fs.mkdirSync(screenshots, { recursive: true });
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: path.join(screenshots, `${prefix}-${name}-desktop.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  let overflow: number;
  let narrow: Awaited<ReturnType<AxeBuilder['analyze']>>;
  try {
    await page.screenshot({ path: path.join(screenshots, `${prefix}-${name}-390.png`), fullPage: true });
    overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    narrow = await new AxeBuilder({ page }).analyze();
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
  expect(overflow, `${name} scrolls sideways at 390 px`).toBeLessThanOrEqual(1);
  const wide = await new AxeBuilder({ page }).analyze();
  const serious = [...narrow.violations, ...wide.violations].filter(
    (v) => v.impact === 'serious' || v.impact === 'critical',
  );
  expect(
    serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    name,
  ).toEqual([]);
}
