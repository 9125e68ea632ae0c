/**
 * Builds the dashboard (dashboard/, React + Vite) into dashboard/dist when it is missing
 * or its sources changed: `npm start` and `npm test` call this, so no extra command is
 * needed. Stale means the SHA-256 over the dashboard's sources, its config, the
 * SDK's generated types and the domain modules it bundles differs from the one stamped in dist/.build-hash. Vite comes
 * from node_modules, so the build works offline. `npm run dashboard:build` forces it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const dashboardDir = fileURLToPath(new URL('../dashboard/', import.meta.url));
export const dashboardDist = path.join(dashboardDir, 'dist');
const stampPath = path.join(dashboardDist, '.build-hash');
const sdkTypes = fileURLToPath(new URL('../sdk/openapi.ts', import.meta.url));
/** The pure domain modules the dashboard bundles (prices in words, the pricing rules it checks a plan with before sending it). */
const sharedDomain = ['pricing.ts', 'price-text.ts', 'money.ts', 'intl-formats.ts'].map((name) =>
  fileURLToPath(new URL(`../domain/${name}`, import.meta.url)),
);

function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)]))
    .sort();
}

/** The hash of everything the build reads (sources, config, the SDK's types). */
export function dashboardSourceHash(): string {
  const hash = createHash('sha256');
  const inputs = [
    ...['index.html', 'vite.config.ts', 'package.json', 'tsconfig.json'].map((name) => path.join(dashboardDir, name)),
    ...filesUnder(path.join(dashboardDir, 'src')),
    sdkTypes,
    ...sharedDomain,
  ];
  for (const file of inputs) {
    hash.update(path.relative(dashboardDir, file)).update('\0').update(fs.readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

export function dashboardIsFresh(): boolean {
  try {
    return (
      fs.readFileSync(stampPath, 'utf8').trim() === dashboardSourceHash() &&
      fs.existsSync(path.join(dashboardDist, 'index.html'))
    );
  } catch {
    return false;
  }
}

/** Builds when missing or stale; answers whether it built. */
export async function ensureDashboardBuilt(
  options: { force?: boolean; log?: (message: string) => void } = {},
): Promise<boolean> {
  if (!options.force && dashboardIsFresh()) return false;
  const started = Date.now();
  const hash = dashboardSourceHash();
  const { build } = await import('vite');
  await build({ configFile: path.join(dashboardDir, 'vite.config.ts'), logLevel: 'warn' });
  fs.writeFileSync(stampPath, `${hash}\n`);
  options.log?.(`dashboard built in ${Date.now() - started} ms`);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureDashboardBuilt({ force: process.argv.includes('--force'), log: console.log });
  console.log(`dashboard is in ${dashboardDist}`);
}
