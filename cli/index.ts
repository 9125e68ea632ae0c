#!/usr/bin/env node
/**
 * `billing`: the engine's command-line tool (docs/cli.md). A client of the public
 * HTTP API only: it imports nothing from api/, services/ or db/.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Command, CommanderError, Option } from 'commander';

import { signWebhook } from '../domain/webhooks.ts';
import { type ClientOptions, download, readSse, request } from './client.ts';
import {
  type CliConfig,
  configPath,
  ensureWebhookSecret,
  keyFor,
  keyMode,
  type Mode,
  readConfig,
  resolveApiBase,
  resolveMode,
  temporalUiUrl,
  writeConfig,
} from './config.ts';
import { CliError, exitCodes } from './exit-codes.ts';
import { addMeterEventsSend, sendMeterEvents } from './meter-events-send.ts';
// Imported (not read from disk beside this file) so the installed bundle (dev/cli-bundle.ts) carries it.
import operationsJson from './operations.json' with { type: 'json' };
import type { FieldSpec, Operation } from './operations.ts';
import cliPackage from './package.json' with { type: 'json' };
import { recipeFor, triggerableEvents } from './triggers.ts';

const operations = operationsJson as Operation[];

interface Globals {
  env?: string;
  apiBase?: string;
  json?: boolean;
}

interface Context {
  config: CliConfig;
  mode: Mode;
  apiBase: string;
  json: boolean;
}

function context(cmd: Command): Context {
  const globals = cmd.optsWithGlobals<Globals>();
  const config = readConfig();
  return {
    config,
    mode: resolveMode(globals.env, config),
    apiBase: resolveApiBase(globals.apiBase, config),
    json: Boolean(globals.json),
  };
}

/** The client for `ctx`'s mode; a stored key of the other mode is refused here, before any request. */
function authed(ctx: Context): ClientOptions & { accountId: string } {
  const key = keyFor(ctx.mode, ctx.config);
  return { apiBase: ctx.apiBase, cliKey: key.secret, accountId: key.account_id };
}

const out = (text: string): void => void process.stdout.write(`${text}\n`);
const err = (text: string): void => void process.stderr.write(`${text}\n`);

function printResult(ctx: Context, value: unknown): void {
  if (ctx.json) return out(JSON.stringify(value, null, 2));
  const v = value as { object?: string; data?: Record<string, unknown>[]; has_more?: boolean };
  if (v && v.object === 'list' && Array.isArray(v.data)) {
    if (v.data.length === 0) return out('(none)');
    const columns = ['id', 'type', 'status', 'name', 'email', 'amount', 'currency', 'created_at'].filter((col) =>
      v.data!.some((row) => row[col] !== undefined && row[col] !== null),
    );
    for (const row of v.data) out(columns.map((col) => String(row[col] ?? '-')).join('  '));
    if (v.has_more) out('… more: pass --starting_after <last id>');
    return;
  }
  if (typeof value === 'string') return out(value);
  out(JSON.stringify(value, null, 2));
}

function usage(message: string): never {
  throw new CliError(exitCodes.usage, 'usage', message);
}

function convert(field: FieldSpec, raw: string): unknown {
  switch (field.type) {
    case 'integer':
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || (field.type === 'integer' && !Number.isInteger(n)))
        usage(`--${field.name} must be a${field.type === 'integer' ? 'n integer' : ' number'} (got "${raw}").`);
      return n;
    }
    case 'boolean':
      if (raw !== 'true' && raw !== 'false') usage(`--${field.name} must be true or false (got "${raw}").`);
      return raw === 'true';
    case 'array':
      if (raw.trim().startsWith('[')) return parseJson(field.name, raw);
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    case 'object':
      return parseJson(field.name, raw);
    default:
      return raw;
  }
}

function parseJson(name: string, raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return usage(`--${name} must be JSON (got "${raw}").`);
  }
}

const reservedOptions = new Set(['json', 'env', 'api-base', 'confirm', 'data', 'help', 'd', 'wait']);

/** The destructive-command guard: in live mode the id must be repeated with --confirm. */
function requireConfirm(ctx: Context, id: string | undefined, confirm: string | undefined, what: string): void {
  if (ctx.mode !== 'live') return;
  if (!id || confirm !== id) usage(`${what} in live mode needs --confirm ${id ?? '<id>'}.`);
}

// ---- open a browser, download a PDF ---------------------------------------

/** An executable named `name` on PATH, or null. */
function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * The command that opens a link in the user's browser: $BROWSER (the first of its
 * `:`-separated list, as xdg-utils reads it) first, then the platform's opener
 * (xdg-open, open, or start on Windows). Null when there is none.
 */
export function browserCommand(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): { command: string; args: string[] } | null {
  const chosen = env.BROWSER?.split(':').find((entry) => entry.trim() !== '');
  if (chosen) {
    const [command, ...args] = chosen.trim().split(/\s+/);
    return { command: command!, args };
  }
  if (platform === 'darwin') return onPath('open') ? { command: 'open', args: [] } : null;
  if (platform === 'win32') return { command: 'cmd', args: ['/c', 'start', '""'] };
  const xdg = onPath('xdg-open');
  return xdg ? { command: xdg, args: [] } : null;
}

/** Launches the browser on `url` without waiting for it; false when none could be started. */
async function launchBrowser(url: string): Promise<boolean> {
  const opener = browserCommand();
  if (!opener) return false;
  // $BROWSER may name %s for the link (xdg-utils' convention); otherwise the link is the last argument.
  const args = opener.args.some((a) => a.includes('%s'))
    ? opener.args.map((a) => a.replace('%s', url))
    : [...opener.args, url];
  return new Promise((resolve) => {
    const child = spawn(opener.command, args, { detached: true, stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}

async function openLink(ctx: Context, url: string, print: boolean): Promise<void> {
  const launched = print ? false : await launchBrowser(url);
  if (ctx.json) return out(JSON.stringify({ url, opened: launched }));
  if (launched) err(`Opened ${url} in your browser.`);
  else if (!print) err('No browser to open (set $BROWSER, or install xdg-open); the link:');
  out(url);
}

/** Saves a file the API answers at `apiPath` (to `-o`, `-` for stdout, else the server's file name or `fallbackName` here). */
async function saveDownload(cmd: Command, apiPath: string, accept: string, fallbackName: string): Promise<void> {
  const opts = cmd.opts<{ output?: string }>();
  const ctx = context(cmd);
  const client = authed(ctx);
  const file = await download(client, apiPath, accept);
  if (opts.output === '-') {
    process.stdout.write(file.bytes);
    return;
  }
  const target = path.resolve(opts.output ?? (file.filename ?? fallbackName).replace(/[/\\]/g, '_'));
  writeFileSync(target, file.bytes);
  if (ctx.json) out(JSON.stringify({ file: target, bytes: file.bytes.length, content_type: file.contentType }));
  else out(`Saved ${target} (${file.bytes.length} bytes).`);
}

const invoicePdf = (cmd: Command, id: string) =>
  saveDownload(cmd, `/v1/invoices/${encodeURIComponent(id)}/pdf`, 'application/pdf', `${id}.pdf`);

/** `exports download <id>`: the export's file; with --wait, once the export has finished (its progress on stderr). */
async function exportDownload(cmd: Command, id: string): Promise<void> {
  const ctx = context(cmd);
  const client = authed(ctx);
  let current = await request(client, 'GET', `/v1/exports/${encodeURIComponent(id)}`);
  const spec = waitable['exports create']!;
  if (!spec.done(current)) {
    if (!cmd.opts<{ wait?: boolean }>().wait)
      usage(`Export ${id} is ${current.status}: pass --wait to download it once it has finished.`);
    while (!spec.done(current)) {
      err(spec.progress(current));
      await new Promise((r) => setTimeout(r, 500));
      current = await request(client, 'GET', `/v1/exports/${encodeURIComponent(id)}`);
    }
  }
  if (spec.failed(current))
    throw new CliError(
      exitCodes.server,
      'failed',
      `${current.id} ended ${current.status}${current.error ? `: ${current.error}` : ''}.`,
    );
  return saveDownload(cmd, `/v1/exports/${encodeURIComponent(id)}/file`, '*/*', `${id}.${current.format ?? 'csv'}`);
}

/**
 * Long work the CLI can wait for with `--wait`: it polls the object every half second,
 * shows its progress on stderr, and prints the object once it is done (exit 0), or
 * failed (the server exit code, 7).
 */
const waitable: Record<
  string,
  { getPath(id: string): string; done(o: any): boolean; failed(o: any): boolean; progress(o: any): string }
> = {
  'exports create': {
    getPath: (id) => `/v1/exports/${encodeURIComponent(id)}`,
    done: (o) => o.status !== 'pending' && o.status !== 'running',
    failed: (o) => o.status === 'failed' || o.status === 'expired',
    progress: (o) =>
      `export ${o.id} ${o.status}: ${o.progress?.rows_written ?? 0}${o.progress?.rows_expected != null ? ` of ${o.progress.rows_expected}` : ''} rows`,
  },
  'test-clocks advance': {
    getPath: (id) => `/v1/test_clocks/${encodeURIComponent(id)}`,
    done: (o) => o.status !== 'advancing',
    failed: (o) => o.status === 'internal_failure',
    progress: (o) =>
      `test clock ${o.id} ${o.status} to ${o.status_details?.advancing?.target_frozen_time ?? o.frozen_time}`,
  },
};

async function waitFor(
  ctx: Context,
  client: Parameters<typeof request>[0],
  spec: (typeof waitable)[string],
  first: any,
): Promise<void> {
  let current = first;
  let last = '';
  const started = Date.now();
  while (!spec.done(current)) {
    const line = spec.progress(current);
    if (line !== last) err(`${line} (${Math.round((Date.now() - started) / 1000)} s)`);
    last = line;
    await new Promise((r) => setTimeout(r, 500));
    current = await request(client, 'GET', spec.getPath(current.id));
  }
  err(spec.progress(current));
  printResult(ctx, current);
  if (spec.failed(current))
    throw new CliError(
      exitCodes.server,
      'failed',
      `${current.id} ended ${current.status}${current.error ? `: ${current.error}` : ''}.`,
    );
}

/** Operations the generic command cannot serve (a binary answer): their own commands below. */
const ownCommands = new Set(['invoices pdf', 'exports file']);

function addResourceCommands(program: Command): void {
  const groups = new Map<string, Command>();
  for (const op of operations) {
    let group = groups.get(op.resource);
    if (!group) {
      group = program
        .command(op.resource)
        .description(`${op.resource.replace(/-/g, ' ')} (from the API's OpenAPI document)`);
      groups.set(op.resource, group);
    }
    if (ownCommands.has(`${op.resource} ${op.action}`)) {
      if (op.resource === 'invoices' && op.action === 'pdf') {
        group
          .command('pdf')
          .description(`${op.summary}, saved to a file — ${op.method} ${op.path}`)
          .argument('<id>')
          .option(
            '-o, --output <file>',
            'where to save it (default: the invoice number .pdf in this folder; - for stdout)',
          )
          .action((id: string, _opts, command: Command) => invoicePdf(command, id));
      }
      if (op.resource === 'exports' && op.action === 'file') {
        group
          .command('download')
          .alias('file')
          .description(`${op.summary}, saved to a file — ${op.method} ${op.path}`)
          .argument('<id>')
          .option(
            '-o, --output <file>',
            "where to save it (default: the export's file name in this folder; - for stdout)",
          )
          .option('--wait', 'wait for a pending or running export to finish first')
          .action((id: string, _opts, command: Command) => exportDownload(command, id));
      }
      continue;
    }
    const cmd = group.command(op.action).description(`${op.summary} — ${op.method} ${op.path}`);
    for (const param of op.pathParams) cmd.argument(`<${param}>`);
    const fields = [
      ...op.query.map((f) => ({ ...f, in: 'query' as const })),
      ...op.body.map((f) => ({ ...f, in: 'body' as const })),
    ];
    for (const field of fields) {
      if (reservedOptions.has(field.name)) continue;
      cmd.addOption(
        new Option(
          `--${field.name} <value>`,
          `${field.type}${field.required ? ', required' : ''}${field.description ? `: ${field.description}` : ''}`,
        ),
      );
    }
    if (op.body.length > 0)
      cmd.option(
        '-d, --data <key=value...>',
        'a body field, Stripe-CLI style (repeatable; numbers, booleans and JSON parsed by the field type)',
      );
    if (op.destructive) cmd.option('--confirm <id>', 'in live mode: repeat the id to confirm this destructive command');
    const wait = waitable[`${op.resource} ${op.action}`];
    if (wait) cmd.option('--wait', 'wait until it is done, showing progress on stderr');
    cmd.action(async (...args: unknown[]) => {
      const command = args[args.length - 1] as Command;
      const opts = command.opts<Record<string, string | string[] | undefined>>();
      const ids = args.slice(0, op.pathParams.length) as string[];
      const ctx = context(command);
      if (op.destructive)
        requireConfirm(ctx, ids[0], opts.confirm as string | undefined, `${op.resource} ${op.action}`);
      const client = authed(ctx);
      let path = op.path;
      op.pathParams.forEach((param, i) => (path = path.replace(`{${param}}`, encodeURIComponent(ids[i]!))));
      const query: Record<string, string> = {};
      for (const field of op.query)
        if (typeof opts[field.name] === 'string') query[field.name] = opts[field.name] as string;
      let body: Record<string, unknown> | undefined;
      if (op.body.length > 0) {
        body = {};
        for (const field of op.body)
          if (typeof opts[field.name] === 'string') body[field.name] = convert(field, opts[field.name] as string);
        for (const pair of (opts.data as string[] | undefined) ?? []) {
          const eq = pair.indexOf('=');
          if (eq <= 0) usage(`-d takes key=value (got "${pair}").`);
          const key = pair.slice(0, eq);
          const raw = pair.slice(eq + 1);
          const field = op.body.find((f) => f.name === key);
          body[key] = field ? convert(field, raw) : raw;
        }
        if (op.body.some((f) => f.name === 'account_id') && body.account_id === undefined)
          body.account_id = client.accountId;
        const missing = op.body.filter((f) => f.required && body![f.name] === undefined).map((f) => `--${f.name}`);
        if (missing.length > 0) usage(`${op.resource} ${op.action} needs ${missing.join(', ')}.`);
      }
      const result = await request(client, op.method, path, body, query);
      if (wait && opts.wait) return waitFor(ctx, client, wait, result);
      printResult(ctx, result);
    });
  }
}

// ---- login ---------------------------------------------------------------

function deviceName(): string {
  return `${os.userInfo().username}@${os.hostname()}`;
}

function spinner(text: string): { stop(final?: string): void } {
  if (!process.stderr.isTTY) {
    err(text);
    return { stop: (final) => final && err(final) };
  }
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  let i = 0;
  const timer = setInterval(() => process.stderr.write(`\r${frames[i++ % frames.length]} ${text}`), 100);
  return {
    stop(final) {
      clearInterval(timer);
      process.stderr.write(`\r\x1b[2K${final ? `${final}\n` : ''}`);
    },
  };
}

async function storeKey(
  ctx: Context,
  minted: { id: string; secret: string; name: string; livemode: boolean; expires_at: string },
  accountId: string,
): Promise<void> {
  const mode = keyMode(minted.secret)!;
  ctx.config.key = {
    id: minted.id,
    secret: minted.secret,
    name: minted.name,
    livemode: minted.livemode,
    account_id: accountId,
    expires_at: minted.expires_at,
  };
  ctx.config.env = mode;
  if (!ctx.config.api_base) ctx.config.api_base = ctx.apiBase;
  writeConfig(ctx.config);
  const who = await request({ apiBase: ctx.apiBase, cliKey: minted.secret }, 'GET', '/v1/cli/whoami');
  if (ctx.json)
    out(
      JSON.stringify(
        {
          logged_in: true,
          key: { id: minted.id, name: minted.name, livemode: minted.livemode, expires_at: minted.expires_at },
          account: who.account,
          user: who.user,
        },
        null,
        2,
      ),
    );
  else {
    out(`Logged in as ${who.user?.email} to ${who.account.name} (${who.account.id}), ${mode} mode.`);
    out(`CLI key ${minted.id} "${minted.name}" expires ${minted.expires_at}; stored in ${configPath()}.`);
  }
}

async function login(cmd: Command): Promise<void> {
  const opts = cmd.opts<{ email?: string; password?: string; name?: string }>();
  const ctx = context(cmd);
  const name = opts.name ?? deviceName();
  if (opts.email || opts.password) {
    if (!opts.email || !opts.password) usage('--email and --password go together.');
    const session = await request({ apiBase: ctx.apiBase }, 'POST', '/v1/auth/login', {
      email: opts.email,
      password: opts.password,
    });
    const bearer = { apiBase: ctx.apiBase, bearer: session.access_token as string };
    const minted = await request(bearer, 'POST', '/v1/cli_keys', { name, mode: ctx.mode });
    // The password session was only needed to mint the key.
    await request(bearer, 'DELETE', '/v1/auth/session').catch(() => undefined);
    const who = await request({ apiBase: ctx.apiBase, cliKey: minted.secret }, 'GET', '/v1/cli/whoami');
    return storeKey(ctx, minted, who.account.id);
  }
  const device = await request({ apiBase: ctx.apiBase }, 'POST', '/v1/cli/device', { name });
  err(`Your login code is ${device.user_code}`);
  err(
    `Open ${device.verification_url} and approve it as the account owner${ctx.mode === 'live' ? ' (choose live mode)' : ''}.`,
  );
  const deadline = Date.now() + device.expires_in * 1000;
  const spin = spinner('Waiting for approval…');
  try {
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, device.interval * 1000));
      try {
        const minted = await request({ apiBase: ctx.apiBase }, 'POST', '/v1/cli/token', {
          device_code: device.device_code,
        });
        spin.stop('✔ Approved.');
        const who = await request({ apiBase: ctx.apiBase, cliKey: minted.secret }, 'GET', '/v1/cli/whoami');
        return await storeKey(ctx, minted, who.account.id);
      } catch (error) {
        if (error instanceof CliError && error.code === 'authorization_pending') continue;
        if (error instanceof CliError && error.exitCode === exitCodes.network) continue;
        throw error;
      }
    }
  } finally {
    spin.stop();
  }
  throw new CliError(
    exitCodes.auth,
    'expired_token',
    'The login code expired before it was approved; run `billing login` again.',
  );
}

// ---- listen ----------------------------------------------------------------

async function listen(cmd: Command): Promise<void> {
  const opts = cmd.opts<{ forwardTo: string; events?: string }>();
  const ctx = context(cmd);
  const client = authed(ctx);
  let target: URL;
  try {
    target = new URL(opts.forwardTo);
  } catch {
    return usage(`--forward-to must be a URL such as http://localhost:4242/webhooks (got "${opts.forwardTo}").`);
  }
  const secret = ensureWebhookSecret(ctx.config);
  const events = opts.events
    ? opts.events
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let announced = false;
  while (!controller.signal.aborted) {
    await readSse(
      client,
      '/v1/events/stream',
      events.length ? { types: events.join(',') } : {},
      controller.signal,
      async ({ id, data }) => {
        const event = JSON.parse(data) as { id: string; type: string };
        const timestamp = Math.floor(Date.now() / 1000);
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'billing-cli-listen/0.1',
          'webhook-id': id ?? event.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook([secret], id ?? event.id, timestamp, data),
        };
        const started = performance.now();
        let status: string;
        try {
          const response = await fetch(target, {
            method: 'POST',
            headers,
            body: data,
            signal: AbortSignal.timeout(10_000),
          });
          await response.arrayBuffer().catch(() => undefined);
          status = String(response.status);
        } catch (error) {
          status = `error (${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message})`;
        }
        const ms = Math.round(performance.now() - started);
        if (ctx.json)
          out(JSON.stringify({ event_id: event.id, type: event.type, status, forwarded_to: target.href, ms }));
        else
          out(`${new Date().toISOString()}  ${event.type}  ${event.id}  -> POST ${target.href}  [${status}] ${ms} ms`);
      },
      () => {
        if (announced) return err('Reconnected.');
        announced = true;
        err(`Ready! Forwarding ${events.length ? events.join(', ') : 'all'} ${ctx.mode}-mode events to ${target.href}`);
        err(
          `Your local webhook signing secret is ${secret} (Standard Webhooks; stable, stored in ${configPath()}). ^C to quit.`,
        );
      },
    );
    if (!controller.signal.aborted) {
      err('The event stream closed; reconnecting…');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

// ---- logs tail -------------------------------------------------------------

function statusMatches(filter: string | undefined, status: number): boolean {
  if (!filter) return true;
  return filter.split(',').some((f) => {
    const m = /^([1-5])xx$/i.exec(f.trim());
    return m ? Math.floor(status / 100) === Number(m[1]) : Number(f) === status;
  });
}

async function logsTail(cmd: Command): Promise<void> {
  const opts = cmd.opts<{ status?: string; path?: string; method?: string; recent?: boolean }>();
  if (opts.status && !opts.status.split(',').every((f) => /^([1-5]xx|[1-5]\d\d)$/i.test(f.trim())))
    usage('--status takes codes or classes such as 404 or 4xx,5xx.');
  const ctx = context(cmd);
  const client = authed(ctx);
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  await readSse(
    client,
    '/v1/logs/stream',
    opts.recent ? { recent: 'true' } : {},
    controller.signal,
    ({ data }) => {
      const line = JSON.parse(data) as {
        request_id: string;
        method: string;
        path: string;
        status: number;
        duration_ms: number;
        source: string;
        created_at: string;
      };
      if (!statusMatches(opts.status, line.status)) return;
      if (opts.path && !line.path.startsWith(opts.path)) return;
      if (opts.method && line.method !== opts.method.toUpperCase()) return;
      if (ctx.json) out(JSON.stringify(line));
      else
        out(
          `${line.created_at.slice(11, 19)}  ${line.status}  ${line.method.padEnd(6)} ${line.path}  ${line.request_id}  ${line.duration_ms} ms  [${line.source}]`,
        );
    },
    () => err(`Tailing ${ctx.mode}-mode API requests served by ${ctx.apiBase} (^C to quit).`),
  );
}

// ---- trigger ---------------------------------------------------------------

async function trigger(event: string, cmd: Command): Promise<void> {
  const recipe = recipeFor(event);
  if (!recipe) usage(`trigger knows ${triggerableEvents.join(', ')} (got "${event}").`);
  const ctx = context(cmd);
  if (ctx.mode !== 'test') usage('trigger creates objects in the sandbox only: use --env test.');
  const client = authed(ctx);
  const spin = spinner(`Triggering ${event}…`);
  let created: Record<string, string>;
  try {
    created = await recipe.run(
      (method, apiPath, body) => request(client, method, apiPath, body),
      Date.now().toString(36),
      client.accountId,
      async (pagePath, form) =>
        // A page's form as a browser posts it (no key: the page's link is its credential).
        (await fetch(new URL(pagePath, ctx.apiBase), { method: 'POST', body: new URLSearchParams(form) })).status,
      // Another account's user (its access token, in the sandbox), or no credential (sign-up, login).
      (accessToken) => (method, apiPath, body) =>
        request(
          accessToken === null
            ? { apiBase: ctx.apiBase }
            : { apiBase: ctx.apiBase, bearer: accessToken, sandbox: true },
          method,
          apiPath,
          body,
        ),
    );
  } finally {
    spin.stop();
  }
  if (ctx.json)
    return out(
      JSON.stringify(
        { triggered: event, events: recipe.events, created, ...(recipe.note ? { note: recipe.note } : {}) },
        null,
        2,
      ),
    );
  for (const [kind, id] of Object.entries(created)) if (id) out(`Created ${kind} ${id}`);
  out(
    recipe.note
      ? `Trigger succeeded: ${recipe.events.join(', ')}. ${recipe.note}`
      : `Trigger succeeded: ${recipe.events.join(', ')}${recipe.needsWorker ? " (the engine's worker ran the workflows)" : ''}. See them with \`billing events list --type ${event}\`.`,
  );
}

// ---- program ---------------------------------------------------------------

export function buildProgram(): Command {
  const program = new Command('billing')
    .description(
      'The billing engine from your terminal: log in, forward webhooks, trigger events, tail logs, manage resources.',
    )
    .version(cliPackage.version)
    .addOption(new Option('--env <mode>', 'test or live (overrides FINTECH_ENV and the config file)'))
    .option(
      '--api-base <url>',
      'the API (overrides BILLING_API_BASE and the config file; default http://localhost:3000)',
    )
    .option('--json', 'print JSON (results on stdout; errors as {"error","message"} on stdout too)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  program.hook('preAction', (_root, action) => {
    const globals = action.optsWithGlobals<Globals>();
    const mode = resolveMode(globals.env, readConfig());
    if (mode === 'live') process.stderr.write('[LIVE] ');
  });

  program
    .command('login')
    .description(
      'Log in: a device code approved by the owner in the browser (or with the API), or --email/--password; stores a CLI key',
    )
    .option('--email <email>', "log in without a browser: the owner's email")
    .option('--password <password>', 'with --email')
    .option('--name <device>', "the device name in the key's name (default user@host)")
    .action((_opts, cmd: Command) => login(cmd));
  program
    .command('logout')
    .description('Revoke the stored CLI key and forget it')
    .action(async (_opts, cmd: Command) => {
      const ctx = context(cmd);
      const key = ctx.config.key;
      if (!key) return out('Not logged in.');
      await request({ apiBase: ctx.apiBase, cliKey: key.secret }, 'DELETE', '/v1/cli_keys/current').catch((error) => {
        if (!(error instanceof CliError && error.exitCode === exitCodes.auth)) throw error;
      });
      delete ctx.config.key;
      writeConfig(ctx.config);
      if (ctx.json) out(JSON.stringify({ logged_out: true, key_id: key.id }));
      else out(`Logged out; CLI key ${key.id} revoked.`);
    });
  program
    .command('whoami')
    .description('The account, user, mode and key the CLI acts as')
    .action(async (_opts, cmd: Command) => {
      const ctx = context(cmd);
      const who = await request(authed(ctx), 'GET', '/v1/cli/whoami');
      if (ctx.json) return out(JSON.stringify(who, null, 2));
      out(
        `${who.user?.email ?? '-'} · ${who.account.name} (${who.account.id}) · ${who.livemode ? 'live' : 'test'} mode`,
      );
      if (who.key) out(`CLI key ${who.key.id} "${who.key.name}", expires ${who.key.expires_at}`);
    });
  program
    .command('listen')
    .description(
      "Receive the account's events live and POST each to a local URL, signed (Standard Webhooks) with a stable local secret",
    )
    .requiredOption('--forward-to <url>', 'where to POST each event, e.g. http://localhost:4242/webhooks')
    .option('--events <types>', 'comma-separated event types or families (invoice.*)')
    .action((_opts, cmd: Command) => listen(cmd));
  program
    .command('trigger')
    .description(`Create sandbox objects that produce a real event: ${triggerableEvents.join(', ')}`)
    .argument('<event>', 'the event to produce')
    .action((event: string, _opts, cmd: Command) => trigger(event, cmd));
  const logs = program.command('logs').description('API request logs');
  logs
    .command('tail')
    .description(
      "Stream the account's API requests (method, path, status, request id, source) as this API process serves them",
    )
    .option('--status <filter>', 'status codes or classes, e.g. 4xx or 404,5xx')
    .option('--path <prefix>', 'only paths starting with this, e.g. /v1/customers')
    .option('--method <method>', 'only this HTTP method')
    .option('--recent', 'start with the last requests the API process kept')
    .action((_opts, cmd: Command) => logsTail(cmd));
  program
    .command('open')
    .description(
      'Open the API docs, the OpenAPI document or the Temporal UI in your browser ($BROWSER, else xdg-open); prints the link',
    )
    .argument('<what>', 'docs | openapi | temporal')
    .option('--print', 'only print the link')
    .action((what: string, opts: { print?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const links: Record<string, string> = {
        docs: `${ctx.apiBase}/docs`,
        openapi: `${ctx.apiBase}/openapi.json`,
        temporal: temporalUiUrl(ctx.config, ctx.apiBase),
      };
      if (!links[what]) usage(`open takes ${Object.keys(links).join(', ')}.`);
      return openLink(ctx, links[what]!, Boolean(opts.print));
    });
  addResourceCommands(program);
  const meterEvents = program.commands.find((command) => command.name() === 'meter-events');
  if (meterEvents)
    addMeterEventsSend(meterEvents, (opts, cmd) => {
      const ctx = context(cmd);
      return sendMeterEvents(authed(ctx), opts, (v) => printResult(ctx, v), err);
    });
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv);
    return exitCodes.ok;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    if (error instanceof CliError) {
      if (json) out(JSON.stringify({ error: error.code, message: error.message }));
      err(`error: ${error.message}${error.code && error.code !== 'usage' ? ` (${error.code})` : ''}`);
      return error.exitCode;
    }
    err(`error: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}

process.exitCode = await main(process.argv);
