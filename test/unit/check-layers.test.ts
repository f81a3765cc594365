import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script (scripts/check-layers.mjs), no declarations.
import { checkLayers } from '../../scripts/check-layers.mjs';

type Result = { files: number; problems: string[] };
const check = checkLayers as (root?: string) => Result;

const LAYERS = `# Architecture

## Layers

| layer | folders |
| --- | --- |
| 1 | \`relay\` |
| 2 | \`relay/cli\` |
| 3 | \`relay/ssh\`, \`relay/deploy\` |
| 4 | \`provider\` |

## Other
`;

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** A throwaway tree: docs/architecture.md with the layers above, and the given files. */
function tree(files: Record<string, string>): string {
  root = mkdtempSync(join(tmpdir(), 'ptr-layers-'));
  mkdirSync(join(root, 'docs'));
  writeFileSync(join(root, 'docs', 'architecture.md'), LAYERS);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('scripts/check-layers.mjs', () => {
  it('passes imports that go down the layers', () => {
    const r = check(
      tree({
        'relay/cli/main.ts':
          "import { a } from '../ssh/a.js';\nimport { e } from '../../provider/errors.js';",
        'relay/ssh/a.ts': "import type { E } from '../../provider/errors.js';\nexport const a = 1;",
        'provider/errors.ts': 'export const e = 1; export type E = number;',
      }),
    );
    expect(r).toEqual({ files: 3, problems: [] });
  });

  it('finds a circle closed by a type import, an import up, and one sideways', () => {
    const r = check(
      tree({
        'relay/ssh/a.ts': "import type { B } from './b.js';\nexport type A = 1;",
        'relay/ssh/b.ts': "import type { A } from './a.js';\nexport type B = 2;",
        'relay/deploy/d.ts': "import { x } from '../cli/main.js';\nimport { y } from '../ssh/a.js';",
        'relay/cli/main.ts': 'export const x = 1;',
        'provider/p.ts': "const m = await import('../relay/ssh/a.js');",
      }),
    );
    expect(r.problems).toContainEqual('file circle: relay/ssh/a.ts ⇄ relay/ssh/b.ts');
    expect(
      r.problems.some(
        (p) => p.startsWith('relay/deploy/d.ts imports relay/cli/main.ts') && p.includes('a higher layer'),
      ),
    ).toBe(true);
    expect(
      r.problems.some(
        (p) => p.startsWith('relay/deploy/d.ts imports relay/ssh/a.ts') && p.includes('its own layer'),
      ),
    ).toBe(true);
    expect(r.problems.some((p) => p.startsWith('provider/p.ts imports relay/ssh/a.ts'))).toBe(true);
  });

  it('finds a folder circle made of files that form no file circle', () => {
    const r = check(
      tree({
        'relay/ssh/a.ts': "import { d } from '../deploy/d.js';\nexport const a = 1;",
        'relay/deploy/d.ts': "import { c } from '../ssh/c.js';\nexport const d = 1;",
        'relay/ssh/c.ts': 'export const c = 1;',
      }),
    );
    expect(r.problems).toContainEqual('folder circle: relay/deploy ⇄ relay/ssh');
  });

  it('holds for this repository', () => {
    expect(check().problems).toEqual([]);
  });
});
