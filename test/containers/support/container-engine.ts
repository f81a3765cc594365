/**
 * Whether the container suites can run here: a Docker engine that answers and the images of
 * test/containers/images (built by its script, reused when present). When not, `reason` says why
 * and {@link reportSkip} prints it (the suites skip), or fails the file when capability `docker` is
 * required (PTYRELAY_REQUIRE).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { capability } from '../../support/capabilities.js';

// Ryuk (testcontainers' reaper) is an image from a registry, which is unreachable here; every
// suite stops its own containers instead.
process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';

const BUILD_SCRIPT = join(import.meta.dirname, '..', 'images', 'build-images.sh');
/** A cold build (debootstrap) takes 1–4 minutes on 2 shared cores. */
const BUILD_TIMEOUT_MS = 10 * 60_000;
const DOCKER_INFO_TIMEOUT_MS = 15_000;

export interface ContainerImages {
  base: string;
  host: string;
  nonode: string;
}

export type EngineCheck = { ok: true; images: ContainerImages } | { ok: false; reason: string };

let cached: EngineCheck | undefined;

/** Checks the engine and builds (or finds) the images, once per test process. */
export function containerEngine(): EngineCheck {
  cached ??= check();
  return cached;
}

function check(): EngineCheck {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    encoding: 'utf8',
    timeout: DOCKER_INFO_TIMEOUT_MS,
  });
  if (info.error) return { ok: false, reason: `no docker CLI (${info.error.message})` };
  if (info.status !== 0) {
    return { ok: false, reason: `no Docker engine answers: ${info.stderr.trim().split('\n').pop()}` };
  }
  const build = spawnSync(BUILD_SCRIPT, [], { encoding: 'utf8', timeout: BUILD_TIMEOUT_MS });
  if (build.status !== 0) {
    const tail = `${build.stderr ?? ''}`.trim().split('\n').slice(-3).join(' | ');
    return { ok: false, reason: `building the host images failed (${build.status}): ${tail}` };
  }
  const vars = new Map(
    build.stdout
      .trim()
      .split('\n')
      .map((l) => l.split('=') as [string, string]),
  );
  const base = vars.get('PTYRELAY_BASE_IMAGE');
  const host = vars.get('PTYRELAY_HOST_IMAGE');
  const nonode = vars.get('PTYRELAY_NONODE_IMAGE');
  if (!base || !host || !nonode) return { ok: false, reason: `image script printed ${build.stdout}` };
  return { ok: true, images: { base, host, nonode } };
}

/**
 * Capability `docker`: prints why the container suite is skipped (the CI log must say so), or
 * throws when PTYRELAY_REQUIRE names docker. Returns whether the suite can run (`check.ok`).
 */
export function reportSkip(suite: string, check: EngineCheck): boolean {
  return capability('docker', check.ok ? undefined : `${check.reason} (container suite "${suite}")`);
}
