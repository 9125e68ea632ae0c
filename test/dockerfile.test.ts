import fs from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { dashboardDistDir } from '../api/pages/dashboard.ts';
import { dashboardDir, dashboardDist } from '../dev/dashboard-build.ts';

/**
 * No Docker engine runs where the tests run, so the Dockerfile is checked as data (as
 * docker-compose.yml is in docker-compose.test.ts): a first stage installs the dev
 * dependencies and builds the dashboard with the same script `npm start` uses; the
 * runtime stage installs production dependencies only and copies just dashboard/dist
 * from the first stage, to the place the engine serves it from.
 */
interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | null;
  steps: Instruction[];
}

function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const raw of lines) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [, op, args] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    if (!op) throw new Error(`Unreadable Dockerfile line: ${line}`);
    if (op.toUpperCase() === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args!.trim()) ?? [];
      stages.push({ from: image!, name: name ?? null, steps: [] });
    } else {
      stages.at(-1)!.steps.push({ op: op.toUpperCase(), args: args!.trim() });
    }
  }
  return stages;
}

/** .dockerignore's patterns here are plain paths: a file is left out when it is one or lies under one. */
const ignored = (patterns: string[], file: string) => patterns.some((p) => file === p || file.startsWith(`${p}/`));

describe('Dockerfile', () => {
  const stages = parseDockerfile(fs.readFileSync('Dockerfile', 'utf8'));
  const dockerignore = fs
    .readFileSync('.dockerignore', 'utf8')
    .split('\n')
    .map((l) => l.trim().replace(/\/$/, ''))
    .filter((l) => l && !l.startsWith('#'));
  const workdir = (stage: Stage) => stage.steps.filter((s) => s.op === 'WORKDIR').at(-1)!.args;
  const index = (stage: Stage, match: (s: Instruction) => boolean) => stage.steps.findIndex(match);
  const workspaces: string[] = JSON.parse(fs.readFileSync('package.json', 'utf8')).workspaces;

  it('has two stages from the official Node.js 24 image: the dashboard build, then the runtime', () => {
    expect(stages).toHaveLength(2);
    for (const stage of stages) expect(stage.from).toMatch(/^node:24[\w.-]*$/);
    expect(stages[0]!.name).toBe('dashboard');
    expect(stages[1]!.name).toBeNull();
  });

  it('the dashboard stage installs every workspace with its dev dependencies, then builds with dev/dashboard-build.ts --force', () => {
    const stage = stages[0]!;
    const install = index(stage, (s) => s.op === 'RUN' && /\bnpm ci\b/.test(s.args));
    expect(install).toBeGreaterThan(-1);
    expect(stage.steps[install]!.args).not.toMatch(/--omit[= ]dev|--production/);
    // npm ci refuses a lockfile whose workspaces are missing: each workspace's package.json is there before it runs.
    for (const ws of workspaces) {
      const copied = index(stage, (s) => s.op === 'COPY' && s.args.split(/\s+/).includes(`${ws}/package.json`));
      expect(copied, `${ws}/package.json copied before npm ci`).toBeGreaterThan(-1);
      expect(copied).toBeLessThan(install);
    }
    const sources = index(stage, (s) => s.op === 'COPY' && s.args === '. .');
    const build = index(stage, (s) => s.op === 'RUN' && s.args === 'node dev/dashboard-build.ts --force');
    expect(sources).toBeGreaterThan(install);
    expect(build).toBeGreaterThan(sources);
    // The script builds when asked to, and builds into dashboard/dist.
    expect(fs.readFileSync('dev/dashboard-build.ts', 'utf8')).toContain("process.argv.includes('--force')");
    expect(path.relative(process.cwd(), dashboardDist)).toBe(path.join('dashboard', 'dist'));
  });

  it('the build context holds everything the dashboard build reads, and no dist of the host', () => {
    const inputs = ['index.html', 'vite.config.ts', 'package.json', 'tsconfig.json', 'src'].map((f) =>
      path.relative(process.cwd(), path.join(dashboardDir, f)),
    );
    for (const file of [...inputs, 'sdk/openapi.ts', 'dev/dashboard-build.ts', 'package-lock.json']) {
      expect(fs.existsSync(file), file).toBe(true);
      expect(ignored(dockerignore, file), `${file} reaches the image`).toBe(false);
    }
    // A host's stale build must not reach either stage: the runtime's dist is the first stage's.
    expect(ignored(dockerignore, 'dashboard/dist')).toBe(true);
    expect(ignored(dockerignore, 'node_modules')).toBe(true);
  });

  it('the runtime stage has production dependencies only and copies just dashboard/dist from the build stage, where the engine serves it', () => {
    const stage = stages[1]!;
    const install = stage.steps.find((s) => s.op === 'RUN' && /\bnpm ci\b/.test(s.args));
    expect(install?.args).toMatch(/--omit=dev/);
    for (const ws of workspaces)
      expect(stage.steps.some((s) => s.op === 'COPY' && s.args.split(/\s+/).includes(`${ws}/package.json`))).toBe(true);
    const fromBuild = stage.steps.filter((s) => s.op === 'COPY' && s.args.startsWith('--from='));
    expect(fromBuild).toHaveLength(1);
    const [flag, source, target] = fromBuild[0]!.args.split(/\s+/);
    expect(flag).toBe(`--from=${stages[0]!.name}`);
    expect(source).toBe(path.posix.join(workdir(stages[0]!), 'dashboard/dist'));
    // The target, relative to the runtime's WORKDIR, is the directory api/pages/dashboard.ts serves.
    expect(path.posix.join(workdir(stage), target!) + '/').toBe(
      path.posix.join(workdir(stage), path.relative(process.cwd(), dashboardDistDir)) + '/',
    );
    // ...and it is copied after the sources, so nothing overwrites it.
    expect(index(stage, (s) => s === fromBuild[0])).toBeGreaterThan(
      index(stage, (s) => s.op === 'COPY' && s.args === '. .'),
    );
    expect(stage.steps.find((s) => s.op === 'ENV')?.args).toMatch(/NODE_ENV=production/);
    expect(stage.steps.find((s) => s.op === 'USER')?.args).toBe('node');
    // The API as `npm run api` runs it, V8 flags included (docs/usage.md#measured).
    const apiScript: string = JSON.parse(fs.readFileSync('package.json', 'utf8')).scripts.api;
    expect(JSON.parse(stage.steps.find((s) => s.op === 'CMD')!.args).join(' ')).toBe(apiScript);
    expect(apiScript).toMatch(/^node (--[\w-]+=\d+ )*api\/server\.ts$/);
  });

  it("the runtime needs none of the dashboard's packages: they are dev dependencies of the dashboard workspace", () => {
    const dashboardPackage = JSON.parse(fs.readFileSync('dashboard/package.json', 'utf8'));
    expect(dashboardPackage.dependencies ?? {}).toEqual({});
    for (const name of ['react', 'vite', '@tanstack/react-router', 'recharts'])
      expect(dashboardPackage.devDependencies[name]).toBeDefined();
    const root = JSON.parse(fs.readFileSync('package.json', 'utf8'));
    for (const name of ['react', 'react-dom', 'recharts', '@tanstack/react-router'])
      expect(root.dependencies?.[name]).toBeUndefined();
  });
});
