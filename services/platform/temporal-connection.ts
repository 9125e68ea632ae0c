/**
 * How the API's Temporal client calls Temporal: a request waits a second or so for an unreachable Temporal, not
 * the SDK's ~20 s of retries, and a call that should be quick gets a deadline so a Temporal that hangs (stopped, a
 * network path that drops packets) does not hang the request. Either ends in a gRPC UNAVAILABLE or
 * DEADLINE_EXCEEDED, which api/errors.ts answers with 503 `service_unavailable` and `Retry-After`
 * (domain/dependency-errors.ts): the caller retries, with the same Idempotency-Key.
 *
 * Workers keep the SDK's defaults: their activities and the maintenance reconciler retry on their own terms.
 */
import { defaultGrpcRetryOptions, type GrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/** A gRPC client interceptor (@grpc/grpc-js's Interceptor, as the Temporal client takes them). */
type Interceptor = ReturnType<typeof makeGrpcRetryInterceptor>;

/** Attempts of one call while Temporal cannot be reached: 100, 170 and 290 ms apart (with jitter), about 0.6 s in all. */
export const requestPathGrpcAttempts = 4;

/** The deadline of a call that answers at once when Temporal is well (starting, signalling, describing a workflow...). */
export const quickCallDeadlineMs = 10_000;

/**
 * Calls that do not wait for a worker: a deadline on them never cuts a legitimate wait short. An update, a query and
 * a workflow's result wait for a worker (and poll for up to a minute by design), so they keep none; a Temporal that
 * hangs ends them through the channel's keepalive (about 45 s).
 */
const quickMethods = new Set([
  'StartWorkflowExecution',
  'SignalWorkflowExecution',
  'SignalWithStartWorkflowExecution',
  'DescribeWorkflowExecution',
  'TerminateWorkflowExecution',
  'RequestCancelWorkflowExecution',
  'CountWorkflowExecutions',
  'ListWorkflowExecutions',
  'GetSystemInfo',
  'DescribeNamespace',
]);

/**
 * The gRPC interceptors of the API's Temporal connection (Connection.connect({ interceptors })), in place of the
 * SDK's default retry: at most requestPathGrpcAttempts attempts, and a quick call (quickMethods) gets a deadline unless
 * the caller set one (withDeadline), the same for all its attempts. `observe` sees each retry's delay (tests wait for
 * the last one before closing the channel).
 */
export function requestPathTemporalInterceptors(observe?: (delayMs: number) => void): Interceptor[] {
  const retry: GrpcRetryOptions = defaultGrpcRetryOptions({ maxAttempts: requestPathGrpcAttempts });
  const retrying = makeGrpcRetryInterceptor({
    retryableDecider: retry.retryableDecider,
    delayFunction(attempt, status) {
      const delay = retry.delayFunction(attempt, status);
      observe?.(delay);
      return delay;
    },
  });
  return [
    (options, nextCall) => {
      const method = options.method_definition.path.split('/').pop() ?? '';
      return retrying(
        quickMethods.has(method) && options.deadline === undefined
          ? { ...options, deadline: Date.now() + quickCallDeadlineMs }
          : options,
        nextCall,
      );
    },
  ];
}
