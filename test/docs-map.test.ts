import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

/**
 * Keeps the documentation true to the repository, with no database or Temporal:
 * - README.md's map names every top-level folder that git tracks (found at run
 *   time, so it checks whatever exists) and every workflow file;
 * - README.md links every page in docs/;
 * - no markdown link in README.md or docs/ leaves the repository: relative links
 *   resolve to files that exist inside it (and anchors to headings that exist).
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const readme = read('README.md');

/** Top-level folders of the clone that git tracks; without git, the folders on disk. */
function trackedTopLevelFolders(): string[] {
  const onDisk = fs
    .readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules')
    .map((entry) => entry.name);
  let tracked: Set<string>;
  try {
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    tracked = new Set(
      files
        .split('\n')
        .filter((f) => f.includes('/'))
        .map((f) => f.slice(0, f.indexOf('/'))),
    );
  } catch {
    // No git (an exported tree, a Docker build context): every folder on disk but the ignored ones.
    const ignored = new Set(['data', 'test-results']);
    return onDisk.filter((name) => !ignored.has(name)).sort();
  }
  return onDisk.filter((name) => tracked.has(name)).sort();
}

/** The lines of README.md's "Map of the repository" section, up to the next heading of its level. */
function mapSection(): string {
  const lines = readme.split('\n');
  const start = lines.findIndex((line) => /^##\s+Map of the repository\s*$/i.test(line));
  if (start < 0) throw new Error('README.md has no "## Map of the repository" section');
  const end = lines.findIndex((line, i) => i > start && /^##?\s/.test(line));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

const docsPages = () =>
  fs
    .readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort();

/** Markdown text without fenced code blocks and inline code, where brackets are not links. */
function withoutCode(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`+[^`\n]*`+/g, '');
}

/** Targets of inline links and images `[text](target)` and of reference definitions `[label]: target`. */
function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const references = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!);
  return [...inline, ...references];
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = match[1]!
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

describe('README.md map of the repository', () => {
  it('names every top-level folder git tracks', () => {
    const map = mapSection();
    const folders = trackedTopLevelFolders();
    expect(folders.length).toBeGreaterThan(0);
    const missing = folders.filter((folder) => !new RegExp(`(^|[\\s\`(])${folder}/`, 'm').test(map));
    expect(missing, 'folders missing from README.md "Map of the repository"').toEqual([]);
  });

  it('names every workflow file', () => {
    const map = mapSection();
    const files = fs
      .readdirSync(path.join(root, 'workflows'))
      .filter((name) => name.endsWith('.ts') && name !== 'index.ts');
    expect(files.length).toBeGreaterThan(0);
    const missing = files.filter((file) => !map.includes(file));
    expect(missing, 'workflow files missing from README.md "Map of the repository"').toEqual([]);
  });
});

describe('docs/', () => {
  it('every page is linked from README.md', () => {
    const pages = docsPages();
    expect(pages.length).toBeGreaterThan(0);
    const linked = new Set(
      linkTargets(readme)
        .map((target) => target.split('#')[0]!)
        .map((target) => path.posix.normalize(target.replace(/^\.\//, ''))),
    );
    const unlinked = pages.filter((page) => !linked.has(`docs/${page}`));
    expect(unlinked, 'docs pages README.md does not link').toEqual([]);
  });

  const files = () => ['README.md', ...docsPages().map((page) => `docs/${page}`)];

  it('no markdown link leaves the repository, and every relative link resolves to a file that exists', () => {
    const problems: string[] = [];
    for (const file of files()) {
      const markdown = read(file);
      if (markdown.includes('../shared')) problems.push(`${file}: mentions ../shared`);
      for (const target of linkTargets(markdown)) {
        if (/^(https?:|mailto:)/i.test(target)) continue; // a web page, not a file
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/') || target.startsWith('~')) {
          problems.push(`${file}: ${target} is not a relative link inside the repository`);
          continue;
        }
        const [filePart, anchor] = target.split('#') as [string, string | undefined];
        const resolved =
          filePart === ''
            ? path.join(root, file)
            : path.resolve(path.join(root, path.dirname(file)), decodeURIComponent(filePart));
        const relative = path.relative(root, resolved);
        if (relative.startsWith('..') || path.isAbsolute(relative)) {
          problems.push(`${file}: ${target} points outside the repository`);
          continue;
        }
        if (relative.split(path.sep)[0] === 'node_modules' || !fs.existsSync(resolved)) {
          problems.push(`${file}: ${target} does not exist`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !headingAnchors(fs.readFileSync(resolved, 'utf8')).has(anchor)) {
          problems.push(`${file}: ${target} names no heading of ${relative}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
