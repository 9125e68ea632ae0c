import pino, { type Logger } from 'pino';

export type { Logger };

/** One JSON logger for API and worker; secrets never reach it (redacted by path as a second guard). */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'billing-engine', ...bindings },
    redact: ['req.headers.authorization', '*.password', '*.refresh_token', '*.secret'],
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
