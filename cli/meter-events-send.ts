/**
 * `billing meter-events send`: report usage from the terminal or a script (docs/cli.md,
 * docs/usage.md#batches). One event from options, or many from a file of JSON lines (`-` for stdin)
 * sent 1,000 per request. A line without an identifier gets one:
 * - with a `timestamp`: derived from the file's name, the line number and its text, so sending the
 *   same file again (a retry after a failure half-way) counts nothing twice;
 * - without one: the line is stamped with this run's time and its identifier comes from this run,
 *   so the same file sent again later (an hourly file of the same counts) is usage again, not a
 *   duplicate silently dropped. Such a file is not retry-safe across runs: give its lines
 *   identifiers or timestamps.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { Command } from 'commander';

import { type ClientOptions, request } from './client.ts';
import { CliError, exitCodes } from './exit-codes.ts';

export interface SendOptions {
  eventName?: string;
  customer?: string;
  value?: string;
  payload?: string;
  identifier?: string;
  timestamp?: string;
  file?: string;
  batchSize?: string;
}

type Batch = {
  accepted: number;
  duplicates: number;
  refused: number;
  data: { index: number; status: string; error?: { code: string; message: string } }[];
};

function usage(message: string): never {
  throw new CliError(exitCodes.usage, 'usage', message);
}

function parseJson(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    usage(`${what}: not JSON (${(error as Error).message}).`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) usage(`${what}: a JSON object.`);
  return value as Record<string, unknown>;
}

export async function sendMeterEvents(
  client: ClientOptions,
  opts: SendOptions,
  print: (value: unknown) => void,
  warn: (text: string) => void,
): Promise<void> {
  if (!opts.file) {
    if (!opts.eventName || !opts.customer) usage('meter-events send needs --event-name and --customer (or --file).');
    const payload = opts.payload ? parseJson(opts.payload, '--payload') : {};
    if (opts.value !== undefined) payload.value = opts.value;
    const event: Record<string, unknown> = { event_name: opts.eventName, customer: opts.customer, payload };
    if (opts.identifier) event.identifier = opts.identifier;
    if (opts.timestamp) event.timestamp = /^\d+$/.test(opts.timestamp) ? Number(opts.timestamp) : opts.timestamp;
    return print(await request(client, 'POST', '/v1/meter_events', event));
  }
  const size = Number(opts.batchSize ?? 1000);
  if (!Number.isInteger(size) || size < 1 || size > 1000) usage('--batch-size: 1 to 1000.');
  const text = opts.file === '-' ? readFileSync(0, 'utf8') : readFileSync(opts.file, 'utf8');
  const source = opts.file === '-' ? 'stdin' : path.basename(opts.file);
  const events: { line: number; event: Record<string, unknown> }[] = [];
  const run = { at: Math.floor(Date.now() / 1000), id: randomUUID() };
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const event = parseJson(raw, `line ${i + 1}`);
    if (event.identifier === undefined) {
      const stamped = event.timestamp !== undefined;
      if (!stamped) event.timestamp = run.at;
      event.identifier = `cli-${createHash('sha256')
        .update(`${stamped ? source : run.id}\n${i + 1}\n${raw}`)
        .digest('hex')
        .slice(0, 40)}`;
    }
    events.push({ line: i + 1, event });
  });
  const total = { sent: events.length, accepted: 0, duplicates: 0, refused: 0 };
  for (let at = 0; at < events.length; at += size) {
    const slice = events.slice(at, at + size);
    const batch = (await request(client, 'POST', '/v1/meter_events/batch', {
      events: slice.map((e) => e.event),
    })) as Batch;
    total.accepted += batch.accepted;
    total.duplicates += batch.duplicates;
    total.refused += batch.refused;
    for (const row of batch.data)
      if (row.status === 'refused')
        warn(`line ${slice[row.index]!.line}: refused ${row.error?.code}: ${row.error?.message}`);
  }
  print(total);
  if (total.refused > 0)
    throw new CliError(exitCodes.usage, 'refused', `${total.refused} of ${total.sent} events refused (see above).`);
}

/** Adds `send` under the `meter-events` command group (made from the OpenAPI document). */
export function addMeterEventsSend(group: Command, run: (opts: SendOptions, cmd: Command) => Promise<void>): void {
  group
    .command('send')
    .description(
      'Report usage: one event from options, or a file of JSON lines (one event each; - for stdin) sent 1,000 per request',
    )
    .option('--event-name <name>', 'the meter event_name')
    .option('--customer <id>', 'the customer (cus_…)')
    .option('--value <decimal>', "the payload's value property (payload.value)")
    .option('--payload <json>', 'the payload as a JSON object')
    .option('--identifier <id>', 'unique within the account and mode (default: generated)')
    .option('--timestamp <time>', 'unix seconds or ISO 8601 (default: now)')
    .option(
      '-f, --file <path>',
      'a file of JSON lines, - for stdin; a line without identifier gets one from the file name, line number and text when it has a timestamp, else from this run (stamped now)',
    )
    .option('--batch-size <n>', 'events per request with --file (1 to 1000, default 1000)')
    .action((opts: SendOptions, cmd: Command) => run(opts, cmd));
}
