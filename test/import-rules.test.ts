import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { checkImportRules } from '../dev/import-rules.ts';

const repo = path.resolve(import.meta.dirname, '..');

/** A throwaway tree of files, for showing that the rules catch what they should. */
function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'import-rules-'));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('import rules (dev/import-rules.ts)', () => {
  it('hold for this repository: arrows inward, no cycle', () => {
    expect(checkImportRules(repo)).toEqual([]);
  });

  it('refuse I/O in domain/ and Context.current() outside activities/', () => {
    const root = tree({
      'domain/a.ts': "import { lookup } from 'node:dns/promises';\nexport const a = lookup;\n",
      'domain/b.ts': "import { isIP } from 'node:net';\nexport const b = isIP;\n",
      'services/c.ts': "import { Context } from '@temporalio/activity';\nexport const c = () => Context.current();\n",
      'activities/d.ts': "import { Context } from '@temporalio/activity';\nexport const d = () => Context.current();\n",
    });
    expect(checkImportRules(root).sort()).toEqual([
      'domain/a.ts imports node:dns/promises: domain/ does no I/O',
      'services/c.ts calls Context.current(): only activities/ runs as a Temporal activity',
    ]);
  });

  it('refuse process.env outside config.ts and the entry points', () => {
    const root = tree({
      'services/a.ts': 'export const a = () => process.env.SOME_SETTING;\n',
      'api/b.ts': "export const b = process.env['PORT'];\n",
      'domain/c.ts': 'export const c = (env: NodeJS.ProcessEnv) => env.X;\n',
      'config.ts': 'export const d = process.env.PORT;\n',
      'dev/e.ts': 'export const e = process.env.PORT;\n',
    });
    expect(checkImportRules(root).sort()).toEqual([
      'api/b.ts reads process.env: settings come from config.ts (a Config field passed down)',
      'services/a.ts reads process.env: settings come from config.ts (a Config field passed down)',
    ]);
  });

  it('refuse a route that imports another route', () => {
    const root = tree({
      'api/routes/a.ts': "import { b } from './b.ts';\nexport const a = b;\n",
      'api/routes/b.ts': 'export const b = 1;\n',
    });
    expect(checkImportRules(root)).toEqual([
      expect.stringContaining('api/routes/a.ts imports api/routes/b.ts: a route file imports another route file'),
    ]);
  });

  it('refuse a route that reads the flat ApiDeps fields instead of its context', () => {
    const root = tree({
      'api/routes/a.ts': "import type { ApiDeps } from '../deps.ts';\nexport const a = (deps: ApiDeps) => deps;\n",
      'api/routes/b.ts': 'export const b = (deps: { orm: unknown }) => deps.orm;\n',
      'api/pages/c.ts': 'export const c = (deps: { temporal: unknown }) => deps.temporal;\n',
      'api/routes/d.ts':
        'export const d = (deps: { context: { orm: unknown }; config: unknown }) => [deps.context.orm, deps.config];\n',
    });
    expect(checkImportRules(root).sort()).toEqual([
      expect.stringContaining('api/pages/c.ts reads deps.temporal: a route takes AppDeps'),
      expect.stringContaining('api/routes/a.ts reads ApiDeps: a route takes AppDeps'),
      expect.stringContaining('api/routes/b.ts reads deps.orm: a route takes AppDeps'),
    ]);
  });

  it('refuse an activity or a service that imports api/', () => {
    const root = tree({
      'activities/index.ts': "import { x } from '../api/schemas.ts';\nexport const y = x;\n",
      'services/s.ts': "import type { X } from '../api/deps.ts';\nexport type Y = X;\n",
      'api/schemas.ts': 'export const x = 1;\n',
      'api/deps.ts': 'export type X = number;\n',
    });
    expect(checkImportRules(root)).toEqual([
      expect.stringContaining('activities/index.ts imports api/schemas.ts: activities/ may not import api/'),
      expect.stringContaining('services/s.ts imports api/deps.ts: services/ may not import api/'),
    ]);
  });

  it('let workflows import activities for their types only', () => {
    const root = tree({
      'workflows/w.ts':
        "import type { Activities } from '../activities/index.ts';\nimport { helper } from '../activities/helper.ts';\nexport type A = Activities;\nexport const h = helper;\n",
      'activities/index.ts': 'export type Activities = {};\n',
      'activities/helper.ts': 'export const helper = 1;\n',
    });
    expect(checkImportRules(root)).toEqual([
      expect.stringContaining(
        'workflows/w.ts imports activities/helper.ts: workflows/ may not import activities/ except with `import type`',
      ),
    ]);
  });

  it('find a cycle of value imports, and ignore one closed only by type imports', () => {
    const root = tree({
      'services/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
      'services/b.ts': "import { c } from './c.ts';\nexport const b = c;\n",
      'services/c.ts': "import { a } from './a.ts';\nexport const c = a;\n",
      'domain/x.ts': "import type { Y } from './y.ts';\nexport type X = Y;\n",
      'domain/y.ts': "import type { X } from './x.ts';\nexport type Y = X | 1;\n",
    });
    expect(checkImportRules(root)).toEqual([
      'import cycle: services/a.ts → services/b.ts → services/c.ts → services/a.ts',
    ]);
  });
});
