import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { z } from 'zod';

import { dependencyRetryAfterSeconds, unavailableDependency, unavailableMessage } from '../domain/dependency-errors.ts';
import { ApiError, type ErrorCode, errorStatus, isErrorCode } from '../domain/errors.ts';
import type { Logger } from '../logger.ts';

export function errorBody(code: ErrorCode, message: string) {
  return { error: code, message };
}

export function sendError(c: Context, code: ErrorCode, message: string) {
  return c.json(errorBody(code, message), errorStatus[code] as 400);
}

/** Where a validated value came from (hono's validation targets; a form body is validated as JSON). */
export type RequestPart = 'json' | 'form' | 'query' | 'param' | 'header' | 'cookie';

const partNames: Record<RequestPart, string> = {
  json: 'body',
  form: 'body',
  query: 'query',
  param: 'path',
  header: 'header',
  cookie: 'cookie',
};

/** An issue's message in the API's words: "required", a date with an example, unknown keys by name. */
function issueMessage(issue: z.core.$ZodIssue, part: RequestPart): string {
  if (issue.code === 'unrecognized_keys') {
    const what = part === 'query' ? 'parameter' : part === 'json' || part === 'form' ? 'field' : 'key';
    return `unknown ${what}${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
  }
  // zod says "Invalid input: expected string, received undefined" for a field that is not there.
  if (issue.code === 'invalid_type' && / received undefined$/.test(issue.message)) return 'required';
  if (issue.code === 'invalid_format' && issue.format === 'datetime')
    return 'must be an ISO 8601 date-time such as 2026-01-31T00:00:00Z';
  if (issue.code === 'invalid_format' && issue.format === 'date') return 'must be an ISO 8601 date such as 2026-01-31';
  return issue.message;
}

/**
 * "field.path: problem; other: problem" from a zod error, for `invalid_request`. A
 * problem with the whole value (an unknown key, say) is named by the part of the
 * request it is in: `query: unknown parameter foo`, `body: unknown field bar`.
 */
export function describeZodError(error: z.ZodError, part: RequestPart = 'json'): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : partNames[part]}: ${issueMessage(issue, part)}`)
    .join('; ');
}

/**
 * The single error handler: known errors keep their code, a refused workflow
 * update keeps the code its validator gave, a dependency that cannot be reached
 * (the database, Temporal: domain/dependency-errors.ts) is a 503 `service_unavailable`
 * with Retry-After, anything else is a 500 whose body says nothing of the cause (the
 * log has it, under the request id).
 */
export function handleError(error: Error, c: Context, logger: Logger) {
  if (error instanceof ApiError) return sendError(c, error.code, error.message);
  if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
    const type = error.cause.type;
    if (isErrorCode(type)) return sendError(c, type, error.cause.message);
  }
  if (error instanceof HTTPException) {
    const status = error.status;
    const code: ErrorCode =
      status === 413
        ? 'payload_too_large'
        : status === 415
          ? 'unsupported_media_type'
          : status === 404
            ? 'not_found'
            : status < 500
              ? 'invalid_request'
              : 'internal_error';
    return sendError(c, code, error.message || 'Request refused.');
  }
  const dependency = unavailableDependency(error);
  if (dependency) {
    logger.warn({ err: error, requestId: c.get('requestId'), dependency }, 'dependency unavailable');
    c.header('Retry-After', String(dependencyRetryAfterSeconds));
    return sendError(c, 'service_unavailable', unavailableMessage(dependency));
  }
  logger.error({ err: error, requestId: c.get('requestId') }, 'unhandled error');
  return sendError(
    c,
    'internal_error',
    `Something went wrong on our side. Request id: ${c.get('requestId') ?? 'unknown'}.`,
  );
}
