/**
 * `billing` as users install it: cli/ bundled (dev/cli-bundle.ts) and packed with `npm pack` into
 * billing-cli-<version>.tgz, installed with `npm install -g --prefix <tmp>` (offline: the package has no
 * dependencies), then run from a folder outside the repository with only that prefix's bin before
 * Node's: --version, --help, `open temporal` on the configured UI port, and nothing on stderr (no npm
 * engine warning, no Node warning) on a plain call.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { bundleCli, packCli } from '../dev/cli-bundle.ts';

describe('the billing CLI installed from its packed tarball', () => {
  let dir: string;
  let bin: string;
  const version = JSON.parse(fs.readFileSync('cli/package.json', 'utf8')).version as string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-cli-install-'));
    await bundleCli();
    const tarball = packCli(dir);
    expect(path.basename(tarball)).toBe(`billing-cli-${version}.tgz`);
    execFileSync(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        path.join(dir, 'prefix'),
        tarball,
        '--offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
      ],
      { cwd: dir, stdio: 'pipe' },
    );
    bin = path.join(dir, 'prefix', 'bin', 'billing');
  }, 120_000);
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** `billing …` as a shell would run it: found on PATH, from a folder outside the repository. */
  function billing(args: string[], env: Record<string, string> = {}) {
    const home = path.join(dir, 'home');
    fs.mkdirSync(home, { recursive: true });
    try {
      const stdout = execFileSync('billing', args, {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: [path.dirname(bin), path.dirname(process.execPath), process.env.PATH].join(path.delimiter),
          HOME: home,
          ...env,
        },
      });
      return { code: 0, stdout, stderr: '' };
    } catch (error) {
      const failed = error as { status: number; stdout: string; stderr: string };
      return { code: failed.status, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  it('provides `billing` on the prefix: --version, --help, exit codes, no warnings', () => {
    expect(fs.realpathSync(bin)).toBe(
      path.join(dir, 'prefix', 'lib', 'node_modules', 'billing-cli', 'dist', 'billing.js'),
    );
    // Nothing of the engine came along: one bundled file and its package.json.
    expect(fs.readdirSync(path.join(dir, 'prefix', 'lib', 'node_modules'))).toEqual(['billing-cli']);
    expect(billing(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    const help = billing(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['login', 'listen', 'trigger', 'open', 'customers', 'subscriptions', 'exports'])
      expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    expect(billing(['exports', '--help']).stdout).toMatch(/^ {2}download\|file \[options\] <id>/m);
    const notLoggedIn = billing(['whoami']);
    expect(notLoggedIn).toMatchObject({ code: 3, stdout: '' });
    expect(notLoggedIn.stderr.trim()).toBe('error: Not logged in: run `billing login`. (not_logged_in)');
  });

  it('open temporal: the UI port the engine is configured with, on the API host', () => {
    const open = (env: Record<string, string>) =>
      billing(['open', 'temporal', '--print'], { BILLING_API_BASE: 'http://10.1.2.3:3000', ...env }).stdout.trim();
    expect(open({})).toBe('http://10.1.2.3:8233');
    expect(open({ TEMPORAL_UI_PORT: '18233' })).toBe('http://10.1.2.3:18233');
    expect(open({ TEMPORAL_UI_URL: 'https://temporal.example.com/' })).toBe('https://temporal.example.com');
    expect(billing(['open', 'temporal', '--print'], { TEMPORAL_UI_PORT: 'eighty' })).toMatchObject({ code: 2 });
  });
});
