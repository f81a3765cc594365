import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const DOC = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
/** The product's trees: every file in them has a row of the table. */
const PRODUCT = ['provider', 'agent-stub', 'relay', 'web'];

/** A file the table names: a path from the repository root (`*` allowed in the file name). */
const FILE = /^[\w.-]+(\/[\w.*-]+)+\.(ts|mjs|c)$/;
/** A file named by its name alone: it sits in the folder of the last path before it in the cell. */
const SIBLING = /^[\w.-]+\.(ts|mjs|c)$/;

/** The files cell (the last column) of every row of the "Concern → files" table. */
function fileCells(): string[] {
  const section = DOC.split(/^## /m).find((s) => s.startsWith('Concern → files'));
  if (!section) throw new Error('docs/architecture.md has no "## Concern → files" section');
  return section
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|\s*(area|-+)\s*\|/.test(l))
    .map((l) => {
      const cells = l.split(/(?<!\\)\|/).slice(1, -1);
      return cells[cells.length - 1]!;
    });
}

/** The files a cell names, each as a path from the repository root. */
function namedFiles(cell: string): string[] {
  const out: string[] = [];
  let dir: string | undefined;
  for (const [, span] of cell.matchAll(/`([^`]+)`/g)) {
    if (FILE.test(span!)) {
      out.push(span!);
      dir = dirname(span!);
    } else if (SIBLING.test(span!) && dir) out.push(join(dir, span!));
  }
  return out;
}

function exists(path: string): boolean {
  if (!path.includes('*')) return existsSync(join(ROOT, path));
  const dir = join(ROOT, dirname(path));
  const name = new RegExp(`^${basename(path).replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`);
  return existsSync(dir) && readdirSync(dir).some((f) => name.test(f));
}

/** Every source file of the product trees (as the layer check sees them, plus the C addons). */
function productFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir))) {
      if (name === 'node_modules' || name === 'out') continue;
      const p = join(dir, name);
      if (statSync(join(ROOT, p)).isDirectory()) walk(p);
      else if ((p.endsWith('.ts') && !p.endsWith('.d.ts')) || p.endsWith('.c')) out.push(p);
    }
  };
  for (const t of PRODUCT) walk(t);
  return out.sort();
}

describe('docs/architecture.md, "Concern → files"', () => {
  const cells = fileCells();

  it('is a table with rows', () => {
    expect(cells.length).toBeGreaterThan(20);
  });

  it('names only files that exist (a name alone is in the folder of the path before it)', () => {
    const missing = cells.flatMap(namedFiles).filter((f) => !exists(f));
    expect(missing).toEqual([]);
  });

  it('names every source file of the product, so each has a concern', () => {
    const named = new Set(cells.flatMap(namedFiles));
    expect(productFiles().filter((f) => !named.has(f))).toEqual([]);
  });
});

describe('docs/*.md and README.md', () => {
  it('name only source files that exist', () => {
    const docs = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => join('docs', f)),
    ];
    const missing = docs.flatMap((doc) =>
      [...readFileSync(join(ROOT, doc), 'utf8').matchAll(/`([^`\s]+)`/g)]
        .map((m) => m[1]!)
        .filter((p) => FILE.test(p) && !exists(p))
        .map((p) => `${doc}: ${p}`),
    );
    expect(missing).toEqual([]);
  });
});
