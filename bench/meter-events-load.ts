/**
 * The load generator of bench/meter-events.ts, on a worker thread (so building bodies and timing
 * requests does not share an event loop with the servers under test). Each of `connections` loops
 * sends batches of `batchSize` events with fresh identifiers, `duplicateShare` of them (1%) an
 * identifier sent before; `ratePerSecond` (events) paces the loops when set. Reports requests,
 * events, non-2xx and latencies when `seconds` have passed.
 */
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

export interface LoadJob {
  url: string;
  headers: Record<string, string>;
  customers: string[];
  eventName: string;
  batchSize: number;
  /** 0: one event per request to the single-event route (url is then /v1/meter_events). */
  single: boolean;
  connections: number;
  seconds: number;
  duplicateShare: number;
  ratePerSecond?: number;
  prefix: string;
}

export interface LoadReport {
  requests: number;
  events: number;
  accepted: number;
  duplicates: number;
  non2xx: number;
  latenciesMs: number[];
  seconds: number;
}

async function run(job: LoadJob): Promise<LoadReport> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.connections });
  const target = new URL(job.url);
  const post = (body: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: { ...job.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const latencies: number[] = [];
  let requests = 0;
  let events = 0;
  let accepted = 0;
  let duplicates = 0;
  let non2xx = 0;
  let counter = 0;
  const sent: string[] = [];
  const started = performance.now();
  const deadline = started + job.seconds * 1000;
  const perLoopInterval = job.ratePerSecond ? (1000 * job.batchSize * job.connections) / job.ratePerSecond : 0;
  const loop = async (loopIndex: number) => {
    let next = performance.now() + (perLoopInterval * loopIndex) / job.connections;
    while (performance.now() < deadline) {
      if (perLoopInterval) {
        const wait = next - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        next += perLoopInterval;
      }
      const batch = [];
      for (let i = 0; i < job.batchSize; i++) {
        let identifier: string;
        if (sent.length > 100 && Math.random() < job.duplicateShare)
          identifier = sent[Math.floor(Math.random() * sent.length)]!;
        else {
          identifier = `${job.prefix}-${counter++}`;
          if (sent.length < 100_000) sent.push(identifier);
          else sent[Math.floor(Math.random() * sent.length)] = identifier;
        }
        batch.push({
          event_name: job.eventName,
          customer: job.customers[(counter + i) % job.customers.length]!,
          identifier,
          payload: { value: (counter % 97) + 1, region: counter % 2 ? 'eu' : 'us' },
        });
      }
      const body = JSON.stringify(job.single ? batch[0] : { events: batch });
      const t0 = performance.now();
      const { status, text } = await post(body);
      latencies.push(performance.now() - t0);
      requests++;
      events += job.batchSize;
      if (status >= 300) non2xx++;
      else if (!job.single) {
        const answer = JSON.parse(text) as { accepted: number; duplicates: number };
        accepted += answer.accepted;
        duplicates += answer.duplicates;
      } else if (status === 201) accepted++;
      else duplicates++;
    }
  };
  await Promise.all(Array.from({ length: job.connections }, (_, i) => loop(i)));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return { requests, events, accepted, duplicates, non2xx, latenciesMs: latencies, seconds };
}

if (parentPort) {
  run(workerData as LoadJob).then(
    (report) => parentPort!.postMessage({ report }),
    (error: unknown) => parentPort!.postMessage({ error: String(error) }),
  );
}
