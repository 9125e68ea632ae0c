import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** What the receiver answered. */
  status: number;
}

export interface WebhookReceiver {
  url(path?: string): string;
  received: Received[];
  /** Decides the status of each request (default 200); a promise holds the response until it settles. */
  respond: (request: Omit<Received, 'status'>) => number | Promise<number>;
  /** Resolves once `count` requests matched `filter` (or rejects after timeoutMs of real time, with what `diagnose` tells). */
  waitFor(count: number, filter?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  /** What a test knows of the sender's state when a wait times out (the dispatcher workflow, say): added to the error. */
  diagnose?: () => Promise<string>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every webhook it gets. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const request = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const status = await receiver.respond(request);
      received.push({ ...request, status });
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status < 300 ? 'ok' : `failing with ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const receiver: WebhookReceiver = {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    received,
    respond: () => 200,
    async waitFor(count, filter = () => true, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = received.filter(filter);
        if (matching.length >= count) return matching;
        if (Date.now() > deadline) {
          const state = receiver.diagnose
            ? await receiver.diagnose().catch((error: unknown) => `(diagnose failed: ${String(error)})`)
            : '';
          throw new Error(
            `expected ${count} webhooks, got ${matching.length}: ${JSON.stringify(matching.map((m) => [m.path, m.body.slice(0, 120)]))}${state ? `\n${state}` : ''}`,
          );
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return receiver;
}
