import { expect } from 'vitest';

import type { TestEngine } from './engine.ts';

/**
 * A new account calling the API in sandbox mode, as an integrator's own test of test clocks
 * would: `call`, `make` (a POST expected to answer `status`, 201 by default) and `advance`
 * (advances a clock and polls until it is `ready`, failing on any other status or after 30 s).
 */
export async function clockTenant(engine: TestEngine, name: string) {
  const t = await engine.signUp({ name });
  const headers = { ...t.headers, 'x-sandbox-mode': 'true' };
  const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, headers);
  const make = async (path: string, body: unknown, status = 201) => {
    const response = await call('POST', path, body);
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    return response.body;
  };
  const advance = async (clockId: string, to: string) => {
    const answer = await call('POST', `/v1/test_clocks/${clockId}/advance`, { frozen_time: to });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const started = Date.now();
    for (;;) {
      const clock = (await call('GET', `/v1/test_clocks/${clockId}`)).body;
      if (clock.status === 'ready') return clock;
      expect(clock.status, JSON.stringify(clock)).toBe('advancing');
      if (Date.now() - started > 30_000) throw new Error(`clock ${clockId} still advancing after 30 s`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return { t, call, make, advance, accountId: t.accountId, liveHeaders: t.headers };
}
