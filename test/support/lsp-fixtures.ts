import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { LspHostConfig, LspStdioConfig } from '../../provider/wire/lsp-messages.js';

/**
 * A small TypeScript project and a Markdown notes folder for the code-navigation tests, readable by
 * every user (the SSH suites' login user reads them), and the config of the real
 * typescript-language-server (a devDependency, run by the Node that runs the test) or of the
 * recorder server written for the tests.
 */

const NODE_MODULES = realpathSync(join(import.meta.dirname, '..', '..', 'node_modules'));
export const TSLS_CLI = join(NODE_MODULES, 'typescript-language-server', 'lib', 'cli.mjs');
export const TSSERVER = join(NODE_MODULES, 'typescript', 'lib', 'tsserver.js');
/** The fake server that records what it receives (test/support/lsp-recorder-server.cjs). */
export const RECORDER = join(import.meta.dirname, 'lsp-recorder-server.cjs');

export const SHAPES_TS = `export interface Shape {
  area(): number;
}

export class Square implements Shape {
  constructor(private readonly side: number) {}
  area(): number {
    return this.side * this.side;
  }
}

/** Says hello. */
export function greet(name: string): string {
  return \`hello \${name}\`;
}

export const party = '🎉🎉'; export const afterEmoji = 42;
`;

export const MAIN_TS = `import { afterEmoji, greet, type Shape, Square } from './shapes';

const s: Shape = new Square(2);
console.log(greet('a'), s.area());
const mood = '😀'; console.log(greet(mood), afterEmoji);
`;

export const NOTES: Record<string, string> = {
  'notes/Alpha.md': '# Alpha\n\nThe first note. See [[Beta]].\n',
  'notes/Beta.md': '# Beta\n\nBeta links back to [[Alpha|the first]] and to [[Gamma]].\n',
  'notes/deep/Gamma.md': '# Gamma\n\nOnly Beta links here. 😀 [[Alpha#top]] too.\n',
};

/** 1-based line and column (UTF-16 units) of the `nth` occurrence of `word` in `text`. */
export function positionOf(text: string, word: string, nth = 1): { line: number; column: number } {
  let at = -1;
  for (let i = 0; i < nth; i++) {
    at = text.indexOf(word, at + 1);
    if (at < 0) throw new Error(`${word} (#${nth}) is not in the text`);
  }
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  return { line, column: at - before.lastIndexOf('\n') };
}

export interface LspProject {
  root: string;
  cleanup(): void;
}

/** The project in a fresh dir (a git workspace: `.git` marks its root), every dir 0755. */
export function createLspProject(prefix = 'ptr-lsp-'): LspProject {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const files: Record<string, string> = {
    'src/shapes.ts': SHAPES_TS,
    'src/main.ts': MAIN_TS,
    'tsconfig.json': JSON.stringify({
      compilerOptions: { strict: true, target: 'es2022', module: 'commonjs' },
      include: ['src'],
    }),
    '.git/HEAD': 'ref: refs/heads/main\n',
    ...NOTES,
  };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  chmodTree(root);
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

function chmodTree(root: string): void {
  chmodSync(root, 0o755);
  for (const dir of ['src', 'notes', 'notes/deep', '.git']) chmodSync(join(root, dir), 0o755);
}

/** typescript-language-server run by `node` (default: the Node running the test). */
export function tslsConfig(node = process.execPath, idleMs = 600_000): LspStdioConfig {
  return {
    type: 'stdio',
    id: 'typescript',
    command: node,
    args: [TSLS_CLI, '--stdio'],
    extensionToLanguage: { '.ts': 'typescript', '.js': 'javascript' },
    // `never`: answers come from the project, not from tsls's syntax-only server while it loads.
    initializationOptions: { tsserver: { path: TSSERVER, useSyntaxServer: 'never' } },
    env: {},
    idleMs,
  };
}

/** The recorder server: it records each message's method (and a cancel's id) in `record`, one JSON line each. */
export function recorderConfig(record: string, extra: Partial<LspStdioConfig> = {}): LspStdioConfig {
  return {
    type: 'stdio',
    id: 'recorder',
    command: process.execPath,
    args: [RECORDER, record],
    extensionToLanguage: { '.rec': 'recorded' },
    env: {},
    idleMs: 600_000,
    ...extra,
  };
}

export function hostConfig(providers: LspHostConfig['providers'], queryTimeoutMs = 60_000): LspHostConfig {
  return { providers, queryTimeoutMs };
}
