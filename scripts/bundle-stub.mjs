// Bundles the agent stub into one CommonJS file for Node >= 18 (the remote host's own node).
// node-pty stays external: its native binary ships next to the bundle. The screen model's worker
// thread is a bundle of its own (only the terminal emulator and the model code), carried inside
// stub.cjs as source so a host still gets one file; `model-worker.cjs` is the same code as a file
// for tests that start the worker from the sources.
import { mkdirSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['node-pty'],
  legalComments: 'none',
  logLevel: 'warning',
};

const worker = await build({
  ...common,
  entryPoints: ['agent-stub/session/model-worker-entry.ts'],
  write: false,
  outfile: 'dist/stub/model-worker.cjs',
});
const workerSource = worker.outputFiles[0].text;
mkdirSync('dist/stub', { recursive: true });
writeFileSync('dist/stub/model-worker.cjs', workerSource);

await build({
  ...common,
  entryPoints: ['agent-stub/main.ts'],
  outfile: 'dist/stub/stub.cjs',
  define: { __PTYRELAY_MODEL_WORKER__: JSON.stringify(workerSource) },
});
