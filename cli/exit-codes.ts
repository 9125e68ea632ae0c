/** The CLI's exit codes: stable, documented in docs/cli.md. */
export const exitCodes = {
  ok: 0,
  /** The API refused the request for another reason (400 invalid_request, 402, 422). */
  refused: 1,
  /** Bad command line: unknown command or option, missing argument, missing --confirm. */
  usage: 2,
  /** Not logged in, key invalid/expired/revoked, key of the other mode, forbidden (401, 403). */
  auth: 3,
  notFound: 4,
  conflict: 5,
  rateLimited: 6,
  server: 7,
  network: 8,
} as const;

export class CliError extends Error {
  readonly exitCode: number;
  readonly code: string;
  readonly body?: unknown;
  constructor(exitCode: number, code: string, message: string, body?: unknown) {
    super(message);
    this.exitCode = exitCode;
    this.code = code;
    this.body = body;
  }
}

export function exitCodeForStatus(status: number): number {
  if (status === 401 || status === 403) return exitCodes.auth;
  if (status === 404) return exitCodes.notFound;
  if (status === 409) return exitCodes.conflict;
  if (status === 429) return exitCodes.rateLimited;
  if (status >= 500) return exitCodes.server;
  return exitCodes.refused;
}
