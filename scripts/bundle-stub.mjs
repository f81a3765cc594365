// Bundles the agent stub into one CommonJS file for Node >= 18 (the remote host's own node).
// node-pty stays external: its native binary ships next to the bundle.
import { build } from 'esbuild';

await build({
  entryPoints: ['agent-stub/main.ts'],
  outfile: 'dist/stub/stub.cjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['node-pty'],
  legalComments: 'none',
  logLevel: 'warning',
});
