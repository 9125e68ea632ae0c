import { CliError, exitCodeForStatus, exitCodes } from './exit-codes.ts';

export interface ClientOptions {
  apiBase: string;
  cliKey?: string;
  bearer?: string;
  /** With `bearer`: the sandbox (x-sandbox-mode: true); a CLI key carries its mode itself. */
  sandbox?: boolean;
}

const userAgent = 'billing-cli/0.1';

/** Calls the public HTTP API; non-2xx answers become CliError with the documented exit code. */
export async function request(
  options: ClientOptions,
  method: string,
  path: string,
  body?: unknown,
  query?: Record<string, string>,
): Promise<any> {
  const url = new URL(options.apiBase + path);
  for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { 'user-agent': userAgent, accept: 'application/json' };
  if (options.cliKey) headers['x-cli-key'] = options.cliKey;
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.sandbox) headers['x-sandbox-mode'] = 'true';
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new CliError(
      exitCodes.network,
      'network_error',
      `Cannot reach ${options.apiBase}: ${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message}`,
    );
  }
  const type = response.headers.get('content-type') ?? '';
  const parsed = type.includes('json') ? await response.json().catch(() => undefined) : await response.text();
  if (!response.ok) {
    const code = (parsed as { error?: string })?.error ?? `http_${response.status}`;
    const message = (parsed as { message?: string })?.message ?? `HTTP ${response.status}`;
    throw new CliError(exitCodeForStatus(response.status), code, message, parsed);
  }
  return parsed;
}

/** Downloads a binary answer (an invoice's PDF); non-2xx answers become CliError as for `request`. */
export async function download(
  options: ClientOptions,
  path: string,
  accept: string,
): Promise<{ bytes: Buffer; filename: string | null; contentType: string }> {
  const headers: Record<string, string> = { 'user-agent': userAgent, accept };
  if (options.cliKey) headers['x-cli-key'] = options.cliKey;
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  let response: Response;
  try {
    response = await fetch(new URL(options.apiBase + path), { headers });
  } catch (error) {
    throw new CliError(
      exitCodes.network,
      'network_error',
      `Cannot reach ${options.apiBase}: ${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message}`,
    );
  }
  const contentType = response.headers.get('content-type') ?? '';
  if (!response.ok) {
    const parsed = contentType.includes('json')
      ? ((await response.json().catch(() => undefined)) as { error?: string; message?: string } | undefined)
      : undefined;
    throw new CliError(
      exitCodeForStatus(response.status),
      parsed?.error ?? `http_${response.status}`,
      parsed?.message ?? `HTTP ${response.status}`,
      parsed,
    );
  }
  const filename = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? null;
  return { bytes: Buffer.from(await response.arrayBuffer()), filename, contentType };
}

/**
 * Reads a server-sent-events response, calling `onEvent` per event, until `signal`
 * aborts or the server closes the stream.
 */
export async function readSse(
  options: ClientOptions,
  path: string,
  query: Record<string, string>,
  signal: AbortSignal,
  onEvent: (event: { event: string; id?: string; data: string }) => Promise<void> | void,
  onOpen?: () => void,
): Promise<void> {
  const url = new URL(options.apiBase + path);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const headers: Record<string, string> = { 'user-agent': userAgent, accept: 'text/event-stream' };
  if (options.cliKey) headers['x-cli-key'] = options.cliKey;
  let response: Response;
  try {
    response = await fetch(url, { headers, signal });
  } catch (error) {
    if (signal.aborted) return;
    throw new CliError(
      exitCodes.network,
      'network_error',
      `Cannot reach ${options.apiBase}: ${(error as Error).message}`,
    );
  }
  if (!response.ok || !response.body) {
    const parsed = (await response.json().catch(() => ({}))) as { error?: string; message?: string };
    throw new CliError(
      exitCodeForStatus(response.status),
      parsed.error ?? `http_${response.status}`,
      parsed.message ?? `HTTP ${response.status}`,
      parsed,
    );
  }
  onOpen?.();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'event') event = value;
          else if (field === 'id') id = value;
          else if (field === 'data') data.push(value);
        }
        if (data.length > 0) await onEvent({ event, id, data: data.join('\n') });
      }
    }
  } catch (error) {
    if (signal.aborted) return;
    throw new CliError(exitCodes.network, 'network_error', `The stream broke: ${(error as Error).message}`);
  }
}
