// How the agent stub is bundled (scripts/bundle-stub.mjs, and tests that build other versions):
// one CommonJS file for Node >= 18 (the remote host's own node). node-pty stays external: its
// native binary ships next to the bundle. The screen model's worker thread is a bundle of its
// own (only the terminal emulator and the model code), carried inside the stub as source so a
// host still gets one file; `model-worker.cjs` beside it is the same code as a file, for tests
// that start the worker from the sources.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rewriteAscii, toAscii } from './ascii-only.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['node-pty'],
  legalComments: 'none',
  logLevel: 'warning',
};

/** Writes the stub to `outfile` (and its worker's bundle beside it); `banner` runs first. */
export async function bundleStub({ outfile, banner = '' }) {
  const worker = await build({
    ...common,
    entryPoints: [join(ROOT, 'agent-stub', 'session', 'model-worker-entry.ts')],
    write: false,
    outfile: join(dirname(outfile), 'model-worker.cjs'),
  });
  const workerSource = toAscii(worker.outputFiles[0].text);
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(join(dirname(outfile), 'model-worker.cjs'), workerSource);
  await build({
    ...common,
    entryPoints: [join(ROOT, 'agent-stub', 'main.ts')],
    outfile,
    define: { __PTYRELAY_MODEL_WORKER__: JSON.stringify(workerSource) },
    ...(banner ? { banner: { js: banner } } : {}),
  });
  rewriteAscii(outfile);
}
