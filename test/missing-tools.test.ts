import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

/**
 * A machine without the Temporal tools and without a way to build them: the
 * engine says exactly what to install, and shows no stack trace.
 */
describe('missing tools', () => {
  const nodeDir = path.dirname(process.execPath);
  const emptyCache = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-no-tools-'));

  function run(script: string, extraEnv: Record<string, string> = {}) {
    // Only node on PATH: no temporal, no go, no java, no mvn.
    return spawnSync(process.execPath, [script], {
      cwd: process.cwd(),
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: nodeDir,
        HOME: emptyCache,
        BILLING_TOOLS_CACHE: emptyCache,
        TEMPORAL_SDK_DOWNLOAD: 'false',
        ...extraEnv,
      },
    });
  }

  it('npm start names what to install for the Temporal CLI', () => {
    const result = run('dev/start.ts', {
      DATABASE_URL: 'postgres://postgres:postgres@127.0.0.1:1/none',
      DATA_DIR: path.join(emptyCache, 'data'),
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('No Temporal CLI could be found or built. Install Go 1.23 or newer');
    expect(result.stderr).toContain('TEMPORAL_CLI_PATH');
    expect(result.stderr + result.stdout).not.toMatch(/\n\s+at /);
  });

  it('npm run tools names what to install for the test server too', () => {
    const cli = run('dev/tools-cli.ts', { TEMPORAL_CLI_PATH: process.execPath });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toContain('No time-skipping test server could be found or fetched. Install a JDK and Maven');
    expect(cli.stderr).not.toMatch(/\n\s+at /);
    const noCli = run('dev/tools-cli.ts');
    expect(noCli.status).toBe(1);
    expect(noCli.stderr).toContain('Install Go 1.23 or newer');
  });
});
