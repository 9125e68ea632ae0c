/**
 * Runs stripe-mock (Stripe's API, answered from its OpenAPI spec and fixtures)
 * on loopback ports of its own, for the Stripe adapter's contract tests.
 */
import { spawn } from 'node:child_process';

import { resolveStripeMock } from './tools.ts';

export interface RunningStripeMock {
  /** `http://127.0.0.1:<port>`, to pass as the Stripe SDK's host/port/protocol. */
  url: string;
  stop(): Promise<void>;
}

export async function startStripeMock(
  options: { log?: (message: string) => void; timeoutMs?: number } = {},
): Promise<RunningStripeMock> {
  const binary = await resolveStripeMock({ log: options.log });
  // Port 0 for both listeners: the kernel picks free ports and stripe-mock prints them, so
  // there is no window between choosing a port and binding it. HTTPS must be given too: with
  // only an HTTP address, stripe-mock still listens for HTTPS on its default :12112 on all
  // interfaces, and a second copy (another test worker or clone) would then fail to start.
  const child = spawn(binary, ['-http-addr', '127.0.0.1:0', '-https-addr', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  const stop = async () => {
    if (!hasExited) child.kill('SIGTERM');
    await exited;
  };

  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no "Listening for HTTP" line within ${options.timeoutMs ?? 15_000} ms`)),
        options.timeoutMs ?? 15_000,
      );
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /Listening for HTTP at address: (\S+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(`http://${match[1]}`);
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('error', reject);
      void exited.then((code) => reject(new Error(`exited with code ${code}`)));
    });
    // Keep reading (one log line per request) so a full pipe never blocks it.
    child.stdout.removeAllListeners('data').resume();
    child.stderr.removeAllListeners('data').resume();
    await waitUntilAnswering(url, 10_000);
    return { url, stop };
  } catch (error) {
    await stop();
    throw new Error(`stripe-mock (${binary}) did not start: ${(error as Error).message}\n${output.trim()}`);
  }
}

/** Asks for a list until it answers 200, i.e. the router and the spec are loaded. */
async function waitUntilAnswering(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(`${url}/v1/customers?limit=1`, { headers: { authorization: 'Bearer sk_test_123' } });
      await response.arrayBuffer();
      if (response.ok) return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
