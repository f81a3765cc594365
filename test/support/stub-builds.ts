import { join } from 'node:path';
import { bundleBuildId } from '../../provider/daemon-runtime/stub-paths.js';
import { bundleStub } from '../../scripts/lib/stub-bundle.mjs';

/** A stub bundle the test built: its path and the build id its daemon reports. */
export interface StubBuild {
  path: string;
  buildId: string;
}

/**
 * Bundles the agent stub as `npm run build` does (scripts/lib/stub-bundle.mjs), into `<dir>/<name>/stub.cjs`. Each
 * `name` gets a different banner statement, so each bundle is a different build (its own sha256,
 * install dir and daemon) of the same code. `banner` is more code run first, before the stub's own
 * (e.g. a daemon that exits at once, for the start-failure tests).
 */
export async function buildStub(dir: string, name: string, banner = ''): Promise<StubBuild> {
  const out = join(dir, name, 'stub.cjs');
  await bundleStub({
    outfile: out,
    banner: `globalThis.__ptyrelayTestBuild = ${JSON.stringify(name)};\n${banner}`,
  });
  return { path: out, buildId: bundleBuildId(out, {}) };
}
