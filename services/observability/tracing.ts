/**
 * OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (config.tracing): an HTTP request's span
 * (api/middleware/observability.ts) is the parent of the Temporal client's call, the workflow's spans, its
 * activities' spans and their SQL statements' spans, one trace (docs/operations.md#traces).
 *
 * Off, nothing of this is loaded into the request path: no middleware, no interceptors, no patched driver, and the
 * workflow bundle is the one without the tracing interceptors (worker.ts), so recorded histories are unchanged.
 *
 * The pieces: one tracer provider per process (BasicTracerProvider with AsyncLocalStorage context and the W3C
 * propagator), spans batched to the OTLP/HTTP exporter (or, in tests, to the exporter given); Temporal's
 * interceptors from @temporalio/interceptors-opentelemetry (client, activities, and the workflow module bundled
 * when tracing is on, whose spans come out of the workflow sandbox through a sink); SQL spans by wrapping the `pg`
 * driver's Client.query, the one door MikroORM's statements go through.
 */
import { context, propagation, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  type OpenTelemetrySinks,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import pg from 'pg';

export interface TracingOptions {
  /** service.name of the spans: billing-api, billing-worker. */
  serviceName: string;
  /** OTLP/HTTP traces endpoint base (http://collector:4318); `/v1/traces` is added. */
  otlpEndpoint?: string;
  /** An exporter of its own instead (tests: InMemorySpanExporter), its spans passed on at once. */
  exporter?: SpanExporter;
}

export interface Tracing {
  tracer: Tracer;
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** The Temporal client's interceptor: a span per start, update and signal, its context in the headers. */
  clientInterceptors: WorkflowClientInterceptor[];
  /** A worker's activity interceptors: a span per activity, child of the workflow's span that scheduled it. */
  activityInterceptors: ActivityInterceptorsFactory[];
  /** A worker's sinks: the workflow sandbox's spans leave it through `exporter`. */
  sinks: InjectedSinks<OpenTelemetrySinks>;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

/** Turns tracing on for this process (once: the API and the worker of `npm start` share it); undefined when off. */
export function startTracing(options: TracingOptions): Tracing | undefined {
  if (installed) return installed;
  if (!options.exporter && !options.otlpEndpoint) return undefined;
  const resource = new Resource({ 'service.name': options.serviceName });
  const spanProcessor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : new BatchSpanProcessor(new OTLPTraceExporter({ url: `${options.otlpEndpoint!.replace(/\/$/, '')}/v1/traces` }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracer = trace.getTracer('billing-engine');
  traceSqlStatements(tracer);
  installed = {
    tracer,
    resource,
    spanProcessor,
    clientInterceptors: [new OpenTelemetryWorkflowClientInterceptor()],
    activityInterceptors: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    sinks: { exporter: makeWorkflowExporter(spanProcessor, resource) },
    shutdown: async () => {
      await provider.shutdown();
    },
  };
  return installed;
}

/** What a statement's span says: its first keyword and the text with string literals blanked (values never leave). */
export function sqlSpanAttributes(text: string): Record<string, string> {
  const statement = text.replace(/'(?:[^']|'')*'/g, "'?'").slice(0, 2000);
  return {
    'db.system': 'postgresql',
    'db.operation': (/^\s*(\w+)/.exec(text)?.[1] ?? 'query').toLowerCase(),
    'db.statement': statement,
  };
}

type QueryFn = (this: unknown, ...args: unknown[]) => unknown;

/**
 * A CLIENT span around each statement sent inside a trace (never a trace of its own: the pool's housekeeping
 * and the scrape's probe outside requests stay untraced). Wraps pg's Client.prototype.query once per process.
 */
function traceSqlStatements(tracer: Tracer): void {
  const proto = pg.Client.prototype as unknown as { query: QueryFn; __billingTraced?: boolean };
  if (proto.__billingTraced) return;
  proto.__billingTraced = true;
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const parent = context.active();
    if (!trace.getSpan(parent)) return original.apply(this, args);
    const config = args[0] as string | { text?: string; submit?: unknown } | undefined;
    const text = typeof config === 'string' ? config : (config?.text ?? '');
    const span = tracer.startSpan(
      `pg ${(/^\s*(\w+)/.exec(text)?.[1] ?? 'query').toLowerCase()}`,
      { kind: SpanKind.CLIENT, attributes: sqlSpanAttributes(text) },
      parent,
    );
    const end = (error?: unknown) => {
      if (error)
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      span.end();
    };
    const callbackAt = args.findIndex((arg) => typeof arg === 'function');
    if (callbackAt >= 0) {
      const callback = args[callbackAt] as (error: unknown, result: unknown) => void;
      args[callbackAt] = (error: unknown, result: unknown) => {
        end(error);
        callback(error, result);
      };
      return context.with(trace.setSpan(parent, span), () => original.apply(this, args));
    }
    const result = context.with(trace.setSpan(parent, span), () => original.apply(this, args)) as {
      then?: unknown;
      once?: (event: string, listener: (error?: unknown) => void) => void;
    };
    if (result && typeof result.then === 'function') (result as Promise<unknown>).then(() => end(), end);
    else if (result && typeof result.once === 'function') {
      result.once('end', () => end());
      result.once('error', end);
    } else end();
    return result;
  };
}

/** The span of the request or activity now running, if tracing is on and one is (for a log line's trace id). */
export const activeSpan = (): Span | undefined => trace.getSpan(context.active());
