// Bundles the relay's command line (`ptyrelay`, `npm start`) into dist/bin: one entry and the
// chunks its lazy imports load when first used (the MCP server, prom-client, the terminal
// emulator, ssh2's stack). A bundle is read and compiled as a few files, where the modules one
// by one (ours and zod's, hundreds) cost an idle relay about 10 MB more RSS (89.0 against
// 78.8 MB, Node 24).
// Packages with native parts stay external and load from node_modules as before. The library
// entry (`dist/index.js`, tsc's output) is unchanged.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { rewriteAscii } from './lib/ascii-only.mjs';

const outdir = 'dist/bin';
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: { ptyrelay: 'relay/cli/main.ts' },
  outdir,
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  external: ['node-pty', 'ssh2', 'cpu-features'],
  // CommonJS packages in the bundle (pino, ws, …) call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __ptyrelayRequire } from 'node:module';\nconst require = __ptyrelayRequire(import.meta.url);",
  },
  legalComments: 'none',
  logLevel: 'warning',
});
for (const f of readdirSync(outdir)) if (f.endsWith('.js')) rewriteAscii(join(outdir, f));
