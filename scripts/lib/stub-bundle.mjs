// How the agent stub is bundled (scripts/bundle-stub.mjs, and tests that build other versions):
// CommonJS files for Node >= 18 (the remote host's own node). node-pty stays external: its native
// binary ships next to the bundle. `stub.cjs` holds what every command runs; what only some need
// ships beside it as parts, loaded on first use:
// - `model-worker.cjs`: the screen model's worker thread (only the terminal emulator and the
//   model code), started from its file;
// - `stub-lsp-libs.cjs`: the LSP libraries (vscode-jsonrpc and the protocol), for the first
//   code-navigation query;
// - `stub-xterm.cjs`: the terminal emulator for the daemon's main thread, which needs one only to
//   restore the screens a stopped daemon left.
// V8 keeps a script's whole source for as long as any of its functions can still be compiled, so
// a part that stayed inside stub.cjs would be held by every daemon and bridge even when unused
// (1.4 MB of source before this split, 0.46 MB after). The first line of stub.cjs names each part
// with its sha256, so stub.cjs's own digest (the build id) covers them, and the deployer ships and
// checks them (relay/deploy/stub-artifacts.ts).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rewriteAscii } from './ascii-only.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The first line of stub.cjs: this marker, then the parts as JSON (file name → sha256); read by
 * relay/deploy/stub-parts.ts.
 */
const STUB_PARTS_MARKER = 'ptyrelay-stub-parts';

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['node-pty'],
  legalComments: 'none',
  logLevel: 'warning',
};

/** Library parts: the module names stub.cjs imports, each read from one part's exports. */
const LIBRARY_PARTS = {
  'stub-lsp-libs.cjs': {
    'vscode-languageserver-protocol': 'protocol',
    'vscode-jsonrpc/node': 'jsonrpcNode',
  },
  'stub-xterm.cjs': {
    '@xterm/headless': 'headless',
    '@xterm/addon-serialize': 'serialize',
  },
};

/** Where stub.cjs reads each library module from: [part file, export name]. */
const LIBRARY_SOURCES = new Map(
  Object.entries(LIBRARY_PARTS).flatMap(([file, mods]) =>
    Object.entries(mods).map(([mod, key]) => [mod, [file, key]]),
  ),
);

/** Packages that only parts carry (the library parts and what they pull in). */
const PART_PACKAGES = [
  'vscode-jsonrpc',
  'vscode-languageserver-protocol',
  'vscode-languageserver-types',
  '@xterm/headless',
  '@xterm/addon-serialize',
];

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Resolves the library modules of LIBRARY_PARTS to a require of their part, beside stub.cjs. */
const libraryPartsPlugin = {
  name: 'stub-library-parts',
  setup(b) {
    const names = [...LIBRARY_SOURCES.keys()].map(escapeRe).join('|');
    b.onResolve({ filter: new RegExp(`^(${names})$`) }, (a) => ({ path: a.path, namespace: 'stub-part' }));
    b.onResolve({ filter: /^\.\/stub-[a-z-]+\.cjs$/ }, (a) => ({ path: a.path, external: true }));
    b.onLoad({ filter: /.*/, namespace: 'stub-part' }, (a) => {
      const [file, key] = LIBRARY_SOURCES.get(a.path);
      return {
        contents: `module.exports = require(${JSON.stringify(`./${file}`)})[${JSON.stringify(key)}];`,
      };
    });
  },
};

/** Bundles one library part: an object of the modules it carries. */
async function buildLibraryPart(outfile, mods) {
  const lines = Object.entries(mods).map(
    ([mod, key]) => `  ${JSON.stringify(key)}: require(${JSON.stringify(mod)}),`,
  );
  await build({
    ...common,
    stdin: { contents: `module.exports = {\n${lines.join('\n')}\n};\n`, resolveDir: ROOT, loader: 'js' },
    outfile,
  });
}

/** Writes the stub to `outfile` and its parts beside it; `banner` is code run first (tests). */
export async function bundleStub({ outfile, banner = '' }) {
  const dir = dirname(outfile);
  mkdirSync(dir, { recursive: true });
  await build({
    ...common,
    entryPoints: [join(ROOT, 'agent-stub', 'session', 'model-worker-entry.ts')],
    outfile: join(dir, 'model-worker.cjs'),
  });
  for (const [file, mods] of Object.entries(LIBRARY_PARTS)) await buildLibraryPart(join(dir, file), mods);
  const parts = {};
  for (const file of ['model-worker.cjs', ...Object.keys(LIBRARY_PARTS)]) {
    rewriteAscii(join(dir, file));
    parts[file] = createHash('sha256')
      .update(readFileSync(join(dir, file)))
      .digest('hex');
  }
  await build({
    ...common,
    entryPoints: [join(ROOT, 'agent-stub', 'main.ts')],
    outfile,
    define: { __PTYRELAY_MODEL_WORKER__: JSON.stringify('model-worker.cjs') },
    plugins: [libraryPartsPlugin],
    banner: { js: `/* ${STUB_PARTS_MARKER} ${JSON.stringify(parts)} */\n${banner}` },
  });
  rewriteAscii(outfile);
  // An import that reached a library some other way than its part would bundle a second copy of
  // it (and keep its source in every daemon): fail the build instead.
  const text = readFileSync(outfile, 'utf8');
  for (const pkg of PART_PACKAGES) {
    if (text.includes(`node_modules/${pkg}/`))
      throw new Error(`stub.cjs bundles ${pkg} instead of reading it from its part`);
  }
}
