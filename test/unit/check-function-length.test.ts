import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script (scripts/check-function-length.mjs), no declarations.
import { checkFunctionLength } from '../../scripts/check-function-length.mjs';

type Result = { files: number; problems: string[] };
const check = checkFunctionLength as (root?: string) => Result;
const SCRIPT = join(import.meta.dirname, '..', '..', 'scripts', 'check-function-length.mjs');

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** A throwaway tree with the given files. */
function tree(files: Record<string, string>): string {
  root = mkdtempSync(join(tmpdir(), 'ptr-fnlen-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** `n` statements: a body that makes its function `n + 2` lines long. */
function body(n: number): string {
  return Array.from({ length: n }, (_, i) => `  const v${i} = ${i};\n`).join('');
}

describe('scripts/check-function-length.mjs', () => {
  it('fails a function over 80 lines without a reason, naming it, its line and its length', () => {
    const dir = tree({
      'relay/long.ts': `// a file\nexport function long(): void {\n${body(80)}}\n`,
      'relay/short.ts': `export function short(): void {\n${body(78)}}\n`,
    });
    expect(check(dir)).toEqual({ files: 2, problems: ['relay/long.ts:2 long 82 lines'] });
    const run = spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('check-function-length: relay/long.ts:2 long 82 lines');
  });

  it('passes one with a `// long-function:` reason above it (or above its variable statement)', () => {
    const dir = tree({
      'agent-stub/a.ts': `/** Doc. */\n// long-function: one sequence\nexport function long(): void {\n${body(80)}}\n`,
      'provider/b.ts': `// long-function: one table\nexport const table = () => {\n${body(90)}};\n`,
    });
    expect(check(dir).problems).toEqual([]);
    const run = spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8' });
    expect(run.status).toBe(0);
  });

  it('finds methods, nested arrows and function expressions; a reason without text does not count', () => {
    const dir = tree({
      'web/c.ts': [
        'export class Pane {',
        '  // long-function:',
        `  draw(): void {\n${body(80)}  }`,
        `  run(): void {\n    setTimeout(() => {\n${body(80)}    });\n  }`,
        '}',
        `export const f = function (): void {\n${body(81)}};`,
        '',
      ].join('\n'),
      'test/ignored.ts': `export function long(): void {\n${body(100)}}\n`,
    });
    expect(check(dir).problems).toEqual([
      'web/c.ts:3 Pane.draw 82 lines',
      'web/c.ts:85 Pane.run 84 lines',
      'web/c.ts:86 <arrow in Pane.run> 82 lines',
      'web/c.ts:170 f 83 lines',
    ]);
  });

  it('holds for this repository', () => {
    expect(check().problems).toEqual([]);
  });
});
