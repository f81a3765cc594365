import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleBuildId } from '../../provider/daemon-runtime/stub-paths.js';
import { PtyRelayError } from '../../provider/errors.js';

/** Root of the ptyrelay package, found from this file whether it runs from dist/ or from sources. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).name === 'ptyrelay') return dir;
    dir = dirname(dir);
  }
  throw new PtyRelayError('CONFIG_INVALID', 'cannot find the ptyrelay package root');
}

/** The bundled stub (`npm run build` writes it). */
export function stubBundlePath(): string {
  const p = join(packageRoot(), 'dist', 'stub', 'stub.cjs');
  if (!existsSync(p))
    throw new PtyRelayError('CONFIG_INVALID', `stub bundle missing at ${p}; run npm run build`);
  return p;
}

/** Same id the daemon computes for itself: sha256 of the bundle, 12 hex digits. */
export function stubBuildId(path = stubBundlePath()): string {
  return bundleBuildId(path);
}
