import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Keeps the documentation true to the repository, with no database or Temporal:
 * - README.md's map names every top-level folder that git tracks (found at run
 *   time, so it checks whatever exists) and every workflow file;
 * - README.md links every page in docs/;
 * - no markdown link in README.md or docs/ leaves the repository: relative links
 *   resolve to files that exist inside it (and anchors to headings that exist);
 * - every repository path a code comment names (services/..., workflows/..., domain/...,
 *   api/..., activities/..., db/..., docs/..., objects/...) exists.
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

/** The repository's TypeScript and JavaScript sources (git's list; without git, a walk of the tree). */
function sourceFiles(): string[] {
  const isSource = (file: string) => /\.(ts|tsx|js|mjs)$/.test(file) && !file.endsWith('.d.ts');
  try {
    return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    })
      .split('\n')
      .filter((file) => isSource(file) && fs.existsSync(path.join(root, file)));
  } catch {
    const skipped = new Set(['node_modules', 'data', 'test-results', 'dist']);
    const walk = (dir: string): string[] =>
      fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
        const file = path.posix.join(dir, entry.name);
        if (entry.isDirectory()) return entry.name.startsWith('.') || skipped.has(entry.name) ? [] : walk(file);
        return isSource(file) ? [file] : [];
      });
    return walk('.');
  }
}

/** Tokens after which a `/` divides; after any other, it starts a regular expression. */
const endsAnOperand = new Set([
  ts.SyntaxKind.Identifier,
  ts.SyntaxKind.PrivateIdentifier,
  ts.SyntaxKind.NumericLiteral,
  ts.SyntaxKind.BigIntLiteral,
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.RegularExpressionLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateTail,
  ts.SyntaxKind.CloseParenToken,
  ts.SyntaxKind.CloseBracketToken,
  ts.SyntaxKind.CloseBraceToken,
  ts.SyntaxKind.PlusPlusToken,
  ts.SyntaxKind.MinusMinusToken,
  ts.SyntaxKind.ThisKeyword,
  ts.SyntaxKind.SuperKeyword,
  ts.SyntaxKind.TrueKeyword,
  ts.SyntaxKind.FalseKeyword,
  ts.SyntaxKind.NullKeyword,
]);

/**
 * The text of every comment in a source file, so `//` inside a string, a template or a regular expression is not
 * one. TypeScript's scanner alone (a full parse of every file took seconds): template literals and regular
 * expressions are rescanned where the parser would; .tsx files (JSX text) are parsed.
 */
function commentsOf(file: string, text: string): { pos: number; text: string }[] {
  if (file.endsWith('.tsx')) return parsedCommentsOf(file, text);
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  const found: { pos: number; text: string }[] = [];
  const templateBraces: boolean[] = []; // one per open brace: true when it is a template's `${`
  let previous = ts.SyntaxKind.Unknown;
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) {
      found.push({ pos: scanner.getTokenStart(), text: scanner.getTokenText() });
      continue;
    }
    if (kind === ts.SyntaxKind.WhitespaceTrivia || kind === ts.SyntaxKind.NewLineTrivia) continue;
    if (kind === ts.SyntaxKind.OpenBraceToken) templateBraces.push(false);
    else if (kind === ts.SyntaxKind.TemplateHead) templateBraces.push(true);
    else if (kind === ts.SyntaxKind.CloseBraceToken && templateBraces.pop()) {
      kind = scanner.reScanTemplateToken(false);
      if (kind === ts.SyntaxKind.TemplateMiddle) templateBraces.push(true);
    } else if (
      (kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) &&
      !endsAnOperand.has(previous)
    )
      kind = scanner.reScanSlashToken();
    previous = kind;
  }
  return found;
}

function parsedCommentsOf(file: string, text: string) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TSX);
  const starts = new Set<number>();
  const found: { pos: number; text: string }[] = [];
  const take = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) {
      if (starts.has(range.pos)) continue;
      starts.add(range.pos);
      found.push({ pos: range.pos, text: text.slice(range.pos, range.end) });
    }
  };
  const visit = (node: ts.Node) => {
    take(ts.getLeadingCommentRanges(text, node.pos));
    take(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  visit(source);
  take(ts.getLeadingCommentRanges(text, source.endOfFileToken.pos));
  return found;
}

/** Paths a comment names under the folders a reader would open (not inside a longer path or URL, no globs or placeholders). */
const namedPath = /(?<![\w./<*-])((?:services|workflows|domain|api|activities|db|docs|objects)\/[\w./-]*\w)(?![\w<*])/g;

function missingPathsInComments(file: string, text: string): string[] {
  const problems: string[] = [];
  for (const comment of commentsOf(file, text))
    for (const match of comment.text.matchAll(namedPath)) {
      const named = match[1]!;
      const line = text.slice(0, comment.pos).split('\n').length;
      if (!fs.existsSync(path.join(root, named))) problems.push(`${file}:${line}: ${named} does not exist`);
    }
  return problems;
}

describe('code comments', () => {
  it('find what a comment names, and only in comments', () => {
    const text = [
      '// see services/nowhere/gone.ts and workflows/subscription.ts',
      "const url = 'http://example.com/api/not-a-comment.ts'; // services/<room>/<module>.ts is a placeholder",
      'const re = /"\\/\\/ services\\/in-a-regex.ts/; const t = `${re.source} // services/in-a-template.ts ${`api/x.ts`}`;',
      '/** docs/missing.md, then api/routes/*.ts (a glob) */',
      'export const x = 1;',
    ].join('\n');
    expect(missingPathsInComments('example.ts', text)).toEqual([
      'example.ts:1: services/nowhere/gone.ts does not exist',
      'example.ts:4: docs/missing.md does not exist',
    ]);
  });

  it('every repository path a comment names exists', () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(100);
    const problems = files.flatMap((file) => missingPathsInComments(file, read(file)));
    expect(problems, 'comments naming files that do not exist').toEqual([]);
  });
});
