/**
 * One dependency check of a health answer, as GET /health of the API (api/routes/health.ts) and of a worker
 * process (services/platform/worker-health.ts) report it: whether `probe` answered within the deadline, how long
 * it took, and the first line of its error when it did not.
 */
export interface HealthCheck {
  ok: boolean;
  latency_ms: number;
  error?: string;
}

export async function healthCheck(probe: () => Promise<unknown>, timeoutMs = 3_000): Promise<HealthCheck> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs)),
      ),
    ]);
    return { ok: true, latency_ms: Math.round(performance.now() - started) };
  } catch (error) {
    return {
      ok: false,
      latency_ms: Math.round(performance.now() - started),
      error: (error as Error).message.split('\n')[0],
    };
  } finally {
    clearTimeout(timer);
  }
}
