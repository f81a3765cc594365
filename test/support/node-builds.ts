import { existsSync, readdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';

/** The Node lines ptyrelay supports: the relay on 22, 24, 26 (20 while it costs nothing), hosts on 18 to 26. */
export const HOST_NODE_MAJORS = [18, 20, 22, 24, 26] as const;
export const RELAY_NODE_MAJORS = [22, 24, 26] as const;

/** One official Node build: `bin` is its `bin/node`, `dir` the unpacked package (headers in include/). */
export interface NodeBuild {
  major: number;
  version: string;
  dir: string;
  bin: string;
}

/**
 * The official Node builds `.ci/node-builds.sh` unpacked: from `PTYRELAY_TEST_NODES`
 * (`18=/dir,24=/dir`, what .ci/run exports), else the newest of each line in its cache
 * (`PTYRELAY_NODE_CACHE`, else /var/cache/ptyrelay/node for root, ~/.cache/ptyrelay/node of the
 * real user otherwise: tests change HOME).
 */
export function nodeBuilds(env: NodeJS.ProcessEnv = process.env): Map<number, NodeBuild> {
  const out = new Map<number, NodeBuild>();
  const add = (dir: string) => {
    const bin = join(dir, 'bin', 'node');
    const m = /(\d+)\.(\d+)\.(\d+)$/.exec(dir);
    if (!m || !existsSync(bin)) return;
    const major = Number(m[1]);
    const prev = out.get(major);
    const newer = (a: string, b: string) => {
      const pa = a.split('.').map(Number);
      const pb = b.split('.').map(Number);
      return pa[1]! > pb[1]! || (pa[1] === pb[1] && pa[2]! > pb[2]!);
    };
    const version = `${m[1]}.${m[2]}.${m[3]}`;
    if (!prev || newer(version, prev.version)) out.set(major, { major, version, dir, bin });
  };
  if (env.PTYRELAY_TEST_NODES) {
    for (const pair of env.PTYRELAY_TEST_NODES.split(/[\s,]+/).filter(Boolean)) {
      const dir = pair.slice(pair.indexOf('=') + 1);
      add(dir);
    }
    return out;
  }
  const cache =
    env.PTYRELAY_NODE_CACHE ??
    (process.getuid?.() === 0
      ? '/var/cache/ptyrelay/node'
      : join(userInfo().homedir, '.cache', 'ptyrelay', 'node'));
  if (!existsSync(cache)) return out;
  for (const name of readdirSync(cache)) if (/^\d+\.\d+\.\d+$/.test(name)) add(join(cache, name));
  return out;
}

/** Why the builds of `majors` are not all there (undefined when they are). */
export function missingNodeBuilds(majors: readonly number[], builds = nodeBuilds()): string | undefined {
  const absent = majors.filter((m) => !builds.has(m));
  return absent.length === 0
    ? undefined
    : `no official Node build of ${absent.join(', ')} (run .ci/node-builds.sh ${absent.join(' ')}, or set PTYRELAY_TEST_NODES)`;
}
