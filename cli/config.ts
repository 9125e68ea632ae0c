import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { newWebhookSecret } from '../domain/webhooks.ts';
import { CliError, exitCodes } from './exit-codes.ts';

export type Mode = 'test' | 'live';

export interface StoredKey {
  id: string;
  secret: string;
  name: string;
  livemode: boolean;
  account_id: string;
  expires_at: string;
}

export interface CliConfig {
  api_base?: string;
  env?: Mode;
  key?: StoredKey;
  /** The stable local secret `billing listen` signs forwarded events with. */
  webhook_secret?: string;
  /** Where the Temporal UI is, when not on the API's host at TEMPORAL_UI_PORT or 8233 (`billing open temporal`). */
  temporal_ui_url?: string;
}

/** `$XDG_CONFIG_HOME/billing/config.json`, else `~/.config/billing/config.json`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'billing', 'config.json');
}

export function readConfig(file = configPath()): CliConfig {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as CliConfig;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(exitCodes.usage, 'bad_config', `Cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Written with mode 0600 (the directory 0700): it holds a secret. */
export function writeConfig(config: CliConfig, file = configPath()): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(temp, 0o600);
  fs.renameSync(temp, file);
}

/** `--env` > FINTECH_ENV > the config file > test. */
export function resolveMode(flag: string | undefined, config: CliConfig, env: NodeJS.ProcessEnv = process.env): Mode {
  const value = flag ?? env.FINTECH_ENV ?? config.env ?? 'test';
  if (value !== 'test' && value !== 'live') {
    throw new CliError(
      exitCodes.usage,
      'bad_env',
      `The mode must be "test" or "live" (got "${value}" from ${flag ? '--env' : env.FINTECH_ENV ? 'FINTECH_ENV' : 'the config file'}).`,
    );
  }
  return value;
}

/** `--api-base` > BILLING_API_BASE > the config file > http://localhost:3000. */
export function resolveApiBase(
  flag: string | undefined,
  config: CliConfig,
  env: NodeJS.ProcessEnv = process.env,
): string {
  return (flag ?? env.BILLING_API_BASE ?? config.api_base ?? 'http://localhost:3000').replace(/\/$/, '');
}

/**
 * The Temporal UI `billing open temporal` opens: TEMPORAL_UI_URL > TEMPORAL_UI_PORT (the variable `npm start`
 * serves the UI on) on the API's host > the config file's temporal_ui_url > port 8233 on the API's host.
 */
export function temporalUiUrl(config: CliConfig, apiBase: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEMPORAL_UI_URL) return env.TEMPORAL_UI_URL.replace(/\/$/, '');
  const host = new URL(apiBase).hostname; // an IPv6 host keeps its brackets
  const onApiHost = (port: string) => `http://${host}:${port}`;
  if (env.TEMPORAL_UI_PORT) {
    if (!/^\d{1,5}$/.test(env.TEMPORAL_UI_PORT))
      throw new CliError(
        exitCodes.usage,
        'bad_env',
        `TEMPORAL_UI_PORT must be a port number (got "${env.TEMPORAL_UI_PORT}").`,
      );
    return onApiHost(env.TEMPORAL_UI_PORT);
  }
  if (config.temporal_ui_url) return config.temporal_ui_url.replace(/\/$/, '');
  return onApiHost('8233');
}

export function keyMode(secret: string): Mode | null {
  return secret.startsWith('ck_live_') ? 'live' : secret.startsWith('ck_test_') ? 'test' : null;
}

/** The stored key for `mode`, refused (exit code auth) before any request when it belongs to the other mode. */
export function keyFor(mode: Mode, config: CliConfig): StoredKey {
  const key = config.key;
  if (!key) throw new CliError(exitCodes.auth, 'not_logged_in', 'Not logged in: run `billing login`.');
  const stored = keyMode(key.secret);
  if (stored !== mode) {
    throw new CliError(
      exitCodes.auth,
      'wrong_mode',
      `The stored CLI key is a ${stored ?? 'unknown'}-mode key but the mode is ${mode}: run \`billing login --env ${mode}\` or use --env ${stored}.`,
    );
  }
  return key;
}

export function ensureWebhookSecret(config: CliConfig): string {
  if (!config.webhook_secret) {
    config.webhook_secret = newWebhookSecret();
    writeConfig(config);
  }
  return config.webhook_secret;
}
