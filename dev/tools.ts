/**
 * Finds the binaries the engine needs locally, without the internet: the
 * Temporal CLI (its dev server backs `npm start`), the time-skipping test
 * server (backs `npm test`) and stripe-mock (Stripe's API schema, for the
 * Stripe adapter's contract tests).
 *
 * Order, for each: an explicit path from the environment; one on PATH or in the
 * project's ignored `.tools/`; one built or fetched earlier into the per-user
 * cache (`~/.cache/billing-engine/tools`, shared by every clone on the machine);
 * else build or fetch it from a registry this machine reaches (the CLI with
 * `go install`, the test server as a Maven artifact); and only then the SDK's own
 * download, which needs the internet. A tool that cannot be had ends with
 * `MissingToolError`, whose message says what to install.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const temporalCliVersion = 'v1.5.1';
export const testServerVersion = '1.37.0';
export const stripeMockVersion = 'v0.203.0';
/** The real Temporal server, as in docker-compose.yml (temporalio/auto-setup:1.29.1). */
export const temporalServerVersion = 'v1.29.1';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const projectToolsDir = path.join(projectRoot, '.tools');

export function toolsCacheDir(): string {
  if (process.env.BILLING_TOOLS_CACHE) return path.resolve(process.env.BILLING_TOOLS_CACHE);
  const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(cacheHome, 'billing-engine', 'tools');
}

export class MissingToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MissingToolError';
  }
}

type Log = (message: string) => void;
const defaultLog: Log = (message) => process.stderr.write(`[tools] ${message}\n`);

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function fromEnv(variable: string): string | undefined {
  const value = process.env[variable];
  if (!value) return undefined;
  if (!isExecutable(value))
    throw new MissingToolError(`${variable}=${value} is not an executable file. Point it at the binary, or unset it.`);
  return value;
}

/**
 * Runs a long build step with its output in a log file, printing a line every
 * 15 s so a person sees that it is working (the first CLI build takes minutes).
 */
async function runWithProgress(
  what: string,
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; logFile: string; log: Log },
): Promise<void> {
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  const out = fs.openSync(options.logFile, 'w');
  const started = Date.now();
  options.log(`${what}: running \`${command} ${args.join(' ')}\` (log: ${options.logFile})`);
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', out, out],
  });
  const ticker = setInterval(
    () => options.log(`${what}: still working, ${Math.round((Date.now() - started) / 1000)} s so far...`),
    15_000,
  );
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) {
      const tail = fs.readFileSync(options.logFile, 'utf8').split('\n').slice(-15).join('\n');
      throw new MissingToolError(`${what} failed (exit ${code}). Last lines of ${options.logFile}:\n${tail}`);
    }
    options.log(`${what}: done in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    clearInterval(ticker);
    fs.closeSync(out);
  }
}

/** False when TEMPORAL_SDK_DOWNLOAD=false: never try the SDK's internet download (offline machines, CI). */
export function sdkDownloadAllowed(): boolean {
  return process.env.TEMPORAL_SDK_DOWNLOAD !== 'false';
}

/** `{ path }` of a Temporal CLI binary, or `{ sdkDownload: true }` when only the SDK's download is left. */
export type TemporalCli = { path: string } | { sdkDownload: true };

export async function resolveTemporalCli(options: { log?: Log; allowBuild?: boolean } = {}): Promise<TemporalCli> {
  const log = options.log ?? defaultLog;
  const explicit = fromEnv('TEMPORAL_CLI_PATH');
  if (explicit) return { path: explicit };
  const found =
    onPath('temporal') ??
    [path.join(projectToolsDir, 'temporal'), path.join(toolsCacheDir(), 'bin', 'temporal')].find(isExecutable);
  if (found) return { path: found };

  if (options.allowBuild !== false && onPath('go')) {
    const binDir = path.join(toolsCacheDir(), 'bin');
    fs.mkdirSync(binDir, { recursive: true });
    log(`Temporal CLI not found; building it with Go into ${binDir} (first time only: about 5 minutes on 2 cores).`);
    await runWithProgress(
      'building the Temporal CLI',
      'go',
      ['install', `github.com/temporalio/cli/cmd/temporal@${temporalCliVersion}`],
      {
        env: {
          ...process.env,
          GOBIN: binDir,
          GOFLAGS: [process.env.GOFLAGS, '-buildvcs=false'].filter(Boolean).join(' '),
        },
        logFile: path.join(toolsCacheDir(), 'logs', 'go-install-temporal.log'),
        log,
      },
    );
    const built = path.join(binDir, 'temporal');
    if (isExecutable(built)) return { path: built };
  }
  return { sdkDownload: true };
}

export const temporalCliHelp =
  "No Temporal CLI could be found or built. Install Go 1.23 or newer (https://go.dev/dl; Debian 12's golang package is too old) so it can be built " +
  `with \`go install github.com/temporalio/cli/cmd/temporal@${temporalCliVersion}\`, or put a \`temporal\` binary on PATH, ` +
  'or set TEMPORAL_CLI_PATH to one, or set TEMPORAL_ADDRESS to use a Temporal server you already run.';

/** How to launch the time-skipping test server on a port: `[command, ...args]` before the port, or the SDK's download. */
export type TestServer = { command: string; args: string[] } | { sdkDownload: true };

export async function resolveTestServer(options: { log?: Log; allowBuild?: boolean } = {}): Promise<TestServer> {
  const log = options.log ?? defaultLog;
  const explicit = fromEnv('TEMPORAL_TEST_SERVER_PATH');
  if (explicit) return { command: explicit, args: [] };
  const native =
    onPath('temporal-test-server') ??
    [
      path.join(projectToolsDir, 'temporal-test-server'),
      path.join(toolsCacheDir(), 'bin', 'temporal-test-server'),
    ].find(isExecutable);
  if (native) return { command: native, args: [] };

  const java = onPath('java');
  const jarDir = path.join(toolsCacheDir(), `temporal-test-server-${testServerVersion}`, 'lib');
  const javaLaunch = (): TestServer => ({
    command: java!,
    args: ['-Xss1m', '-XX:+UseSerialGC', '-cp', path.join(jarDir, '*'), 'io.temporal.testserver.TestServer'],
  });
  const haveJars = () =>
    fs.existsSync(jarDir) && fs.readdirSync(jarDir).some((f) => f.startsWith('temporal-test-server'));
  if (java && haveJars()) return javaLaunch();

  const mvn = onPath('mvn');
  if (options.allowBuild !== false && java && mvn) {
    const projectDir = path.dirname(jarDir);
    fs.mkdirSync(projectDir, { recursive: true });
    fs.writeFileSync(
      path.join(projectDir, 'pom.xml'),
      `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.billing-engine</groupId>
  <artifactId>temporal-test-server-runtime</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>${testServerVersion}</version></dependency>
  </dependencies>
</project>
`,
    );
    log(
      `Time-skipping test server not found; fetching io.temporal:temporal-test-server:${testServerVersion} with Maven into ${jarDir}.`,
    );
    await runWithProgress(
      'fetching the test server',
      mvn,
      ['-B', '-q', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${jarDir}`],
      {
        cwd: projectDir,
        logFile: path.join(toolsCacheDir(), 'logs', 'mvn-temporal-test-server.log'),
        log,
      },
    );
    if (haveJars()) return javaLaunch();
  }
  return { sdkDownload: true };
}

export const testServerHelp =
  'No time-skipping test server could be found or fetched. Install a JDK and Maven (apt-get install default-jdk maven) so ' +
  `io.temporal:temporal-test-server:${testServerVersion} can be fetched from Maven Central, or set TEMPORAL_TEST_SERVER_PATH ` +
  'to a temporal-test-server binary.';

/**
 * stripe-mock, found like the Temporal CLI: STRIPE_MOCK_PATH, PATH or `.tools/`,
 * the per-user cache, else built with `go install` (a few seconds). There is no
 * download to fall back on, so when none of that works this throws
 * `MissingToolError` with `stripeMockHelp`.
 */
export async function resolveStripeMock(options: { log?: Log; allowBuild?: boolean } = {}): Promise<string> {
  const log = options.log ?? defaultLog;
  const explicit = fromEnv('STRIPE_MOCK_PATH');
  if (explicit) return explicit;
  const binDir = path.join(toolsCacheDir(), 'bin');
  const found =
    onPath('stripe-mock') ??
    [path.join(projectToolsDir, 'stripe-mock'), path.join(binDir, 'stripe-mock')].find(isExecutable);
  if (found) return found;

  if (options.allowBuild !== false && onPath('go')) {
    fs.mkdirSync(binDir, { recursive: true });
    log(`stripe-mock not found; building it with Go into ${binDir} (first time only).`);
    try {
      await runWithProgress(
        'building stripe-mock',
        'go',
        ['install', `github.com/stripe/stripe-mock@${stripeMockVersion}`],
        {
          env: {
            ...process.env,
            GOBIN: binDir,
            GOFLAGS: [process.env.GOFLAGS, '-buildvcs=false'].filter(Boolean).join(' '),
          },
          logFile: path.join(toolsCacheDir(), 'logs', 'go-install-stripe-mock.log'),
          log,
        },
      );
    } catch (error) {
      if (error instanceof MissingToolError) throw new MissingToolError(`${error.message}\n\n${stripeMockHelp}`);
      throw error;
    }
    const built = path.join(binDir, 'stripe-mock');
    if (isExecutable(built)) return built;
  }
  throw new MissingToolError(stripeMockHelp);
}

export const stripeMockHelp =
  'No stripe-mock could be found or built. Install Go 1.22 or newer (https://go.dev/dl) so it can be built ' +
  `with \`go install github.com/stripe/stripe-mock@${stripeMockVersion}\` (or run \`npm run tools\`), ` +
  'or put a `stripe-mock` binary on PATH, or set STRIPE_MOCK_PATH to one.';

/** Version line of a CLI binary, for logs. */
export function describeCli(cliPath: string): string {
  try {
    return execFileSync(cliPath, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return cliPath;
  }
}

/** Binaries of the real Temporal server: the server itself and its SQL schema tool. */
export interface TemporalServerTools {
  server: string;
  sqlTool: string;
}

/**
 * The real Temporal server (`temporal-server`) and its schema tool
 * (`temporal-sql-tool`), the pair docker-compose.yml runs as
 * temporalio/auto-setup. Found like the others: TEMPORAL_SERVER_PATH and
 * TEMPORAL_SQL_TOOL_PATH, PATH or `.tools/`, the per-user cache; else built
 * with `go install` from the Go module proxy (first time: several minutes on 2
 * cores; `go install` names the binaries `server` and `sql`, renamed here).
 */
export async function resolveTemporalServer(
  options: { log?: Log; allowBuild?: boolean } = {},
): Promise<TemporalServerTools> {
  const log = options.log ?? defaultLog;
  const binDir = path.join(toolsCacheDir(), 'bin');
  const find = (name: string, variable: string) =>
    fromEnv(variable) ?? onPath(name) ?? [path.join(projectToolsDir, name), path.join(binDir, name)].find(isExecutable);
  const wanted = [
    {
      name: 'temporal-server',
      variable: 'TEMPORAL_SERVER_PATH',
      pkg: 'go.temporal.io/server/cmd/server',
      built: 'server',
    },
    {
      name: 'temporal-sql-tool',
      variable: 'TEMPORAL_SQL_TOOL_PATH',
      pkg: 'go.temporal.io/server/cmd/tools/sql',
      built: 'sql',
    },
  ];
  const found: Record<string, string | undefined> = Object.fromEntries(
    wanted.map((w) => [w.name, find(w.name, w.variable)]),
  );
  for (const tool of wanted) {
    if (found[tool.name]) continue;
    if (options.allowBuild === false || !onPath('go')) throw new MissingToolError(temporalServerHelp);
    // A scratch GOBIN: `go install` names the binary after its package folder.
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-server-build-'));
    try {
      log(`${tool.name} not found; building it with Go into ${binDir} (first time only: several minutes on 2 cores).`);
      await runWithProgress(`building ${tool.name}`, 'go', ['install', `${tool.pkg}@${temporalServerVersion}`], {
        env: {
          ...process.env,
          GOBIN: scratch,
          GOFLAGS: [process.env.GOFLAGS, '-buildvcs=false'].filter(Boolean).join(' '),
        },
        logFile: path.join(toolsCacheDir(), 'logs', `go-install-${tool.name}.log`),
        log,
      });
      fs.mkdirSync(binDir, { recursive: true });
      fs.copyFileSync(path.join(scratch, tool.built), path.join(binDir, tool.name));
      fs.chmodSync(path.join(binDir, tool.name), 0o755);
      found[tool.name] = path.join(binDir, tool.name);
    } catch (error) {
      if (error instanceof MissingToolError) throw new MissingToolError(`${error.message}\n\n${temporalServerHelp}`);
      throw error;
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  }
  return { server: found['temporal-server']!, sqlTool: found['temporal-sql-tool']! };
}

export const temporalServerHelp =
  'The real Temporal server could not be found or built. Install Go 1.23 or newer (https://go.dev/dl) so it can be built with ' +
  `\`go install go.temporal.io/server/cmd/server@${temporalServerVersion}\` and \`go install go.temporal.io/server/cmd/tools/sql@${temporalServerVersion}\` ` +
  '(or run `npm run tools -- --server`), or put `temporal-server` and `temporal-sql-tool` binaries on PATH, or set TEMPORAL_SERVER_PATH and ' +
  'TEMPORAL_SQL_TOOL_PATH. Without it, use the dev server (TEMPORAL_SERVER=dev, the default).';
