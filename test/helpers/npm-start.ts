import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * `npm start` as a user runs it, for the end-to-end tests that start the whole
 * engine: a data folder of its own, each start in its own process group (as a
 * terminal gives it, so a "Ctrl-C" to the group reaches npm and everything under
 * it), the output kept for assertions, and every group killed at the end.
 */
export interface NpmStartRun {
  child: ChildProcess;
  /** Resolves with npm's exit code. */
  exit: Promise<number | null>;
  /** Everything printed so far (stdout and stderr). */
  output: () => string;
}

export interface NpmStartSandbox {
  dataDir: string;
  /** Runs `npm start --silent` with DATA_DIR set and these variables (DATABASE_URL and TEMPORAL_ADDRESS unset: the embedded parts start). */
  start: (env: Record<string, string>) => NpmStartRun;
  /** SIGKILLs every group still there and removes the data folder. */
  cleanUp: () => void;
}

export function npmStartSandbox(prefix: string): NpmStartSandbox {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  // Readable by the `postgres` user embedded PostgreSQL runs as under root.
  fs.chmodSync(dataDir, 0o755);
  const running: ChildProcess[] = [];
  return {
    dataDir,
    start(extra) {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATA_DIR: dataDir,
        NODE_ENV: 'development',
        LOG_LEVEL: 'warn',
        ...extra,
      };
      delete env.DATABASE_URL;
      delete env.TEMPORAL_ADDRESS;
      const child = spawn('npm', ['start', '--silent'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      running.push(child);
      let output = '';
      child.stdout!.on('data', (chunk) => (output += chunk));
      child.stderr!.on('data', (chunk) => (output += chunk));
      const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      return { child, exit, output: () => output };
    },
    cleanUp() {
      for (const child of running) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* the group is gone: nothing left behind */
        }
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A JSON client of the started API, as curl would be; `signIn` keeps the bearer token for later calls. */
export function apiClient(port: number) {
  let authorization = '';
  const api = (p: string, init?: RequestInit) => fetch(`http://127.0.0.1:${port}${p}`, init);
  const call = async (method: string, p: string, body?: unknown) => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...(authorization ? { authorization } : {}),
    };
    const response = await api(p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as any };
  };
  return {
    api,
    call,
    authorization: () => authorization,
    healthy: async () =>
      (await api('/health').then(
        (r) => r.status,
        () => 0,
      )) === 200,
    /** Logs in and keeps the access token. */
    async signIn(email: string, password: string) {
      const login = await call('POST', '/v1/auth/login', { email, password });
      if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`);
      authorization = `Bearer ${login.body.access_token}`;
    },
  };
}

/** The Temporal CLI against the started server. */
export const temporalCli =
  (cli: string, port: number) =>
  (...args: string[]) =>
    execFileSync(cli, [...args, '--address', `127.0.0.1:${port}`], { encoding: 'utf8' });
