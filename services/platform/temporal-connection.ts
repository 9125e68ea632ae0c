/**
 * How the API's Temporal client calls Temporal: a request waits a second or so for an unreachable Temporal, not
 * the SDK's ~20 s of retries, and a call that should be quick gets a deadline so a Temporal that hangs (stopped, a
 * network path that drops packets) does not hang the request. Either ends in a gRPC UNAVAILABLE or
 * DEADLINE_EXCEEDED, which api/errors.ts answers with 503 `service_unavailable` and `Retry-After`
 * (domain/dependency-errors.ts): the caller retries, with the same Idempotency-Key.
 *
 * A call that waits for a worker (an update, a query) has no deadline; instead, while it waits, Temporal itself is
 * probed (livenessWatch): a Temporal that accepts connections but answers nothing ends the call in a few seconds,
 * not after the channel's keepalive (about 45 s), and a busy worker is waited for as long as it takes.
 *
 * Workers keep the SDK's defaults: their activities and the maintenance reconciler retry on their own terms.
 */
import { InterceptingCall, type Interceptor, status as GrpcStatus } from '@grpc/grpc-js';
import {
  Connection,
  defaultGrpcRetryOptions,
  type GrpcRetryOptions,
  makeGrpcRetryInterceptor,
} from '@temporalio/client';

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
export function requestPathTemporalInterceptors(
  observe?: (delayMs: number) => void,
  liveness?: LivenessTarget,
): Interceptor[] {
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
    ...(liveness ? [livenessWatch(liveness)] : []),
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

/** Calls that wait for a worker (or for a workflow to get somewhere), for as long as it takes: watched, not given a deadline. */
const waitingMethods = new Set([
  'UpdateWorkflowExecution',
  'PollWorkflowExecutionUpdate',
  'ExecuteMultiOperation',
  'QueryWorkflow',
  'GetWorkflowExecutionHistory',
]);

/** A waiting call probes Temporal after this long without an answer, and again as often while it waits. */
export const livenessProbeAfterMs = 3_000;
/** A probe (GetSystemInfo, answered by the frontend alone) not answered within this is a Temporal that hangs. */
export const livenessProbeDeadlineMs = 4_000;

/** The connection a liveness watch probes: set once it is connected (the interceptors are made before it). */
export interface LivenessTarget {
  connection?: Connection;
}

/**
 * Ends a waiting call with DEADLINE_EXCEEDED (api/errors.ts: 503 with Retry-After) when Temporal does not answer a
 * probe while the call waits. One probe at a time serves every waiting call of the connection.
 */
function livenessWatch(target: LivenessTarget): Interceptor {
  let probing: Promise<boolean> | undefined;
  const probe = (): Promise<boolean> => {
    const connection = target.connection;
    if (!connection) return Promise.resolve(true);
    probing ??= connection
      .withDeadline(Date.now() + livenessProbeDeadlineMs, () => connection.workflowService.getSystemInfo({}))
      .then(
        () => true,
        () => false,
      )
      .finally(() => (probing = undefined));
    return probing;
  };
  return (options, nextCall) => {
    const method = options.method_definition.path.split('/').pop() ?? '';
    if (!waitingMethods.has(method)) return new InterceptingCall(nextCall(options));
    const call: InterceptingCall = new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        let ended = false;
        let timer: NodeJS.Timeout | undefined;
        const watch = () => {
          timer = setTimeout(() => {
            void probe().then((alive) => {
              if (ended) return;
              if (alive) return watch();
              ended = true;
              call.cancelWithStatus(
                GrpcStatus.DEADLINE_EXCEEDED,
                `Temporal did not answer a probe within ${livenessProbeDeadlineMs} ms while ${method} waited`,
              );
            });
          }, livenessProbeAfterMs);
          timer.unref();
        };
        watch();
        next(metadata, {
          onReceiveMetadata: (received, nextMetadata) => nextMetadata(received),
          onReceiveMessage: (message, nextMessage) => nextMessage(message),
          onReceiveStatus(status, nextStatus) {
            ended = true;
            clearTimeout(timer);
            nextStatus(status);
          },
        });
      },
    });
    return call;
  };
}

/**
 * The API's connection to Temporal: requestPathTemporalInterceptors with its liveness watch (api/server.ts, npm start).
 * `observe` as requestPathTemporalInterceptors's.
 */
export async function connectForRequests(address: string, observe?: (delayMs: number) => void): Promise<Connection> {
  const liveness: LivenessTarget = {};
  liveness.connection = await Connection.connect({
    address,
    interceptors: requestPathTemporalInterceptors(observe, liveness),
  });
  return liveness.connection;
}
