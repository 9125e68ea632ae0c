/**
 * `npm run cli:pack`: the `billing` CLI as users install it, apart from the engine. cli/ is bundled
 * (rolldown, from node_modules: offline) into one JavaScript file, cli/dist/billing.js, with commander,
 * the generated operations and the two domain helpers it uses, so the package cli/package.json
 * describes has no dependencies and runs on any Node >= 20.10 (no TypeScript stripping, which Node
 * refuses under node_modules anyway). With --pack, `npm pack` then writes billing-cli-<version>.tgz
 * (to --pack-destination, default the working directory), which `npm install -g` takes.
 *
 * Why a package of its own: the engine's package needs Node 24 (its `engines` made npm print an
 * EBADENGINE warning on every `npx billing`) and has ~100 dependencies; the CLI needs neither.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Vite 8's bundler (the dashboard's vite brings it into node_modules): no download.
import { build } from 'rolldown';

export const cliDir = fileURLToPath(new URL('../cli/', import.meta.url));
export const cliBundlePath = path.join(cliDir, 'dist', 'billing.js');

/** Writes cli/dist/billing.js (executable, with its shebang). */
export async function bundleCli(): Promise<string> {
  await build({
    input: path.join(cliDir, 'index.ts'),
    platform: 'node',
    logLevel: 'warn',
    // cli/index.ts's own shebang line is kept at the top.
    output: { file: cliBundlePath, format: 'esm', minify: false },
  });
  fs.chmodSync(cliBundlePath, 0o755);
  return cliBundlePath;
}

/** `npm pack` of cli/ into `destination`: the tarball's path. */
export function packCli(destination: string): string {
  const output = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', destination], {
    cwd: cliDir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [{ filename }] = JSON.parse(output) as { filename: string }[];
  return path.join(destination, filename);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const file = await bundleCli();
  console.log(`wrote ${path.relative(process.cwd(), file)} (${Math.round(fs.statSync(file).size / 1024)} KB)`);
  const at = process.argv.indexOf('--pack-destination');
  if (process.argv.includes('--pack') || at > 0) {
    const tarball = packCli(path.resolve(at > 0 ? process.argv[at + 1]! : '.'));
    console.log(`wrote ${tarball}\ninstall it with: npm install -g ${tarball}`);
  }
}
