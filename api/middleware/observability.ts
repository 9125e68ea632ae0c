import { context, propagation, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';

import { httpRequestDuration, httpRequests } from '../../services/observability/metrics.ts';

/**
 * The route a request matched, as its pattern (`/v1/customers/:id`): a bounded label. A request no route takes
 * (404, 405, or a catch-all `*` middleware's answer) is `unmatched`, so scanners cannot grow the label set.
 */
export function routeLabel(c: Context): string {
  // The endpoint's route (middleware is registered for ALL methods), whether or not a middleware answered first (401, 422).
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) if (routes[i]!.method !== 'ALL') return routes[i]!.path;
  const last = routes.at(-1)?.path ?? '';
  return c.res.status === 404 || c.res.status === 405 || last === '' || last.endsWith('*') ? 'unmatched' : last;
}

/** Counts every request and observes its latency (billing_http_requests_total, billing_http_request_duration_seconds). */
export function httpMetrics(): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const route = routeLabel(c);
    const status = c.res.status;
    httpRequests.inc({ method: c.req.method, route, status });
    httpRequestDuration.observe(
      { method: c.req.method, route, status_class: `${Math.floor(status / 100)}xx` },
      (performance.now() - started) / 1000,
    );
  };
}

/**
 * One server span per request (`POST /v1/subscriptions`), the active span while the handler runs: the Temporal
 * client's interceptor and the SQL spans (services/observability/tracing.ts) become its children. A caller's
 * W3C `traceparent` header makes it a child of the caller's span. Installed only when tracing is on.
 */
export function httpTracing(tracer: Tracer): MiddlewareHandler {
  return async (c, next) => {
    const parent = propagation.extract(context.active(), c.req.raw.headers, {
      get: (headers, key) => headers.get(key) ?? undefined,
      keys: (headers) => [...headers.keys()],
    });
    const span = tracer.startSpan(
      `${c.req.method} ${c.req.path}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path } },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), () => next());
    } finally {
      const route = routeLabel(c);
      span.updateName(`${c.req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': c.res.status });
      if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
