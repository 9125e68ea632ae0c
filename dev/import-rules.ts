/**
 * The repository's import rules, checked by test/import-rules.test.ts:
 * arrows point inward only, and no module cycle.
 *
 *   api → services, objects, workflows, domain, db
 *   activities → services, workflows, domain, db
 *   services → objects, workflows, domain, db
 *   objects → domain, db
 *   workflows → domain, workflows; `import type` of activities and services only
 *   domain → domain;  db → db, domain (db/migrate.ts also reads config.ts)
 *   cli → domain, objects (a client of the HTTP API only)
 *
 * Route files (api/routes/) do not import each other. Nothing but entry points
 * (dev/, bench/, test/, sdk/) imports api/. Type-only imports count for the
 * direction rules, not for cycles (they vanish at run time). The adapter boundary: domain/ imports no
 * I/O module (fs, dns, child_process, http), only activities/ calls Context.current(), and only config.ts reads
 * process.env (services/, api/, activities/, workflows/ and domain/ get their settings from it).
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ImportEdge {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** Folders whose files the rules cover, and what each may import (besides itself). */
const allowed: Record<string, string[]> = {
  api: ['services', 'objects', 'workflows', 'domain', 'db', 'config.ts', 'logger.ts'],
  activities: ['services', 'workflows', 'domain', 'db', 'objects'],
  services: ['objects', 'workflows', 'domain', 'db', 'config.ts', 'logger.ts'],
  objects: ['domain', 'db'],
  workflows: ['domain'],
  domain: [],
  // The CLI is a client of the public HTTP API: pure helpers and object types only.
  cli: ['domain', 'objects'],
  db: ['domain', 'config.ts', 'logger.ts'],
  'worker.ts': ['activities', 'services', 'workflows', 'domain', 'db', 'config.ts', 'logger.ts', 'export-worker.ts'],
  // The exports worker: the export activity only (none of the workflows).
  'export-worker.ts': ['activities', 'services', 'domain', 'db', 'config.ts', 'logger.ts'],
};
/** Imported for their types only, where a value import is not allowed. */
const typeOnlyAllowed: Record<string, string[]> = { workflows: ['activities', 'services'] };

const skipDirs = new Set(['node_modules', '.git', 'dashboard', 'test-results']);
const importPattern =
  /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Every .ts/.tsx file under `root` (path relative to root) with its text: read once, for both checks. */
function sourceFiles(root: string): Array<{ file: string; text: string }> {
  const files: Array<{ file: string; text: string }> = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || skipDirs.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.tsx?$/.test(entry.name))
        files.push({ file: path.relative(root, full), text: fs.readFileSync(full, 'utf8') });
    }
  };
  walk(root);
  return files;
}

/** Every relative import of the files (paths relative to root). */
function importsOf(files: Array<{ file: string; text: string }>): ImportEdge[] {
  return files.flatMap(({ file: from, text }) =>
    [...text.matchAll(importPattern)].map((m) => ({
      from,
      to: path.normalize(path.join(path.dirname(from), m[3] ?? m[4]!)),
      typeOnly: Boolean(m[2]),
    })),
  );
}

const roomOf = (file: string) => file.split(path.sep)[0]!;

/** What breaks the rules: one line per offending import, and one per cycle. */
export function checkImportRules(root: string): string[] {
  const files = sourceFiles(root);
  const edges = importsOf(files);
  const problems: string[] = [];
  for (const { from, to, typeOnly } of edges) {
    const source = roomOf(from);
    const target = roomOf(to);
    if (
      source === 'api' &&
      target === 'api' &&
      from.startsWith(`api${path.sep}routes${path.sep}`) &&
      to.startsWith(`api${path.sep}routes${path.sep}`)
    ) {
      problems.push(
        `${from} imports ${to}: a route file imports another route file (share through services/, objects/ or an api/ helper)`,
      );
      continue;
    }
    if (source === target || !(source in allowed)) continue;
    if (allowed[source]!.includes(target)) continue;
    if (typeOnly && typeOnlyAllowed[source]?.includes(target)) continue;
    problems.push(
      `${from} imports ${to}: ${source}/ may not import ${target}${target.endsWith('.ts') ? '' : '/'}${typeOnlyAllowed[source]?.includes(target) ? ' except with `import type`' : ''}`,
    );
  }
  for (const cycle of findCycles(edges.filter((e) => !e.typeOnly)))
    problems.push(`import cycle: ${cycle.join(' → ')} → ${cycle[0]}`);
  return [...problems, ...adapterLeaks(files), ...flatRouteDeps(files)];
}

/** What a route may not read beside its context: the flat fields createApp's input (ApiDeps) carries for composing it. */
const flatDeps = /\bApiDeps\b|\bdeps\.(?:orm|temporal|logger|processors)\b/;
/**
 * One source of services for the HTTP edge (#25): a route or page takes AppDeps and reads its database, Temporal,
 * processors and logger from `deps.context` (services/compose.ts composed it), and only settings from `deps.config`.
 */
function flatRouteDeps(files: Array<{ file: string; text: string }>): string[] {
  const problems: string[] = [];
  for (const { file, text } of files) {
    if (!file.startsWith(`api${path.sep}routes${path.sep}`) && !file.startsWith(`api${path.sep}pages${path.sep}`))
      continue;
    const flat = flatDeps.exec(text);
    if (flat) problems.push(`${file} reads ${flat[0]}: a route takes AppDeps and reads its services from deps.context`);
  }
  return problems;
}

/** Node modules that do I/O: domain/ imports none of them (a service does the I/O and hands domain/ the result). */
const ioModules = /^(node:)?(fs|fs\/promises|dns|dns\/promises|child_process|http|https|net\/promises)$/;
const moduleImport = /(?:^|\n)\s*import\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/g;

/** The rooms that get their settings from config.ts (loadConfig), never from the environment. */
const configuredRooms = ['services', 'api', 'activities', 'workflows', 'domain'];

/**
 * The adapter boundary: no I/O module imported in domain/, `Context.current()` (the running Temporal activity)
 * only in activities/, and no `process.env` in the configured rooms.
 */
function adapterLeaks(files: Array<{ file: string; text: string }>): string[] {
  const problems: string[] = [];
  for (const { file, text } of files) {
    const room = roomOf(file);
    if (room === 'domain')
      for (const m of text.matchAll(moduleImport))
        if (ioModules.test(m[1]!)) problems.push(`${file} imports ${m[1]}: domain/ does no I/O`);
    if (['services', 'api', 'domain', 'workflows', 'objects', 'db'].includes(room) && text.includes('Context.current('))
      problems.push(`${file} calls Context.current(): only activities/ runs as a Temporal activity`);
    if (configuredRooms.includes(room) && /\bprocess\.env\b/.test(text))
      problems.push(`${file} reads process.env: settings come from config.ts (a Config field passed down)`);
  }
  return problems;
}

/** Strongly connected components of more than one file (Tarjan), each as a list of files. */
export function findCycles(edges: ImportEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return cycles;
}
