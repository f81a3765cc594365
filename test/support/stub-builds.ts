import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { bundleBuildId } from '../../provider/daemon-runtime/stub-paths.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** A stub bundle the test built: its path and the build id its daemon reports. */
export interface StubBuild {
  path: string;
  buildId: string;
}

/**
 * Bundles the agent stub the way scripts/bundle-stub.mjs does, into `<dir>/<name>/stub.cjs`. Each
 * `name` gets a different banner statement, so each bundle is a different build (its own sha256,
 * install dir and daemon) of the same code. `banner` is more code run first, before the stub's own
 * (e.g. a daemon that exits at once, for the start-failure tests).
 */
export async function buildStub(dir: string, name: string, banner = ''): Promise<StubBuild> {
  const out = join(dir, name, 'stub.cjs');
  mkdirSync(join(dir, name), { recursive: true });
  await build({
    entryPoints: [join(ROOT, 'agent-stub', 'main.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    external: ['node-pty'],
    legalComments: 'none',
    logLevel: 'warning',
    banner: { js: `globalThis.__ptyrelayTestBuild = ${JSON.stringify(name)};\n${banner}` },
  });
  return { path: out, buildId: bundleBuildId(out, {}) };
}
