import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { createLogger } from '../../relay/core/log.js';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import {
  type SshHostConfig,
  SshPtyProvider,
  type SshPtyProviderOptions,
} from '../../relay/ssh/ssh-pty-provider.js';
import type { SshdInstance } from '../../test/support/sshd.js';

export interface BenchOptions {
  quick: boolean;
  only?: Set<string>;
  outDir: string;
  /**
   * Flood variants to run (default all): `ssh`, `ssh-aa`, `ssh-provider`, `node-pty`,
   * `local-provider`, `relay-client`, `floor-local`, `floor-ssh`, `floor-ssh2`, `ssh2-pty`.
   */
  floodVariants?: Set<string>;
  /** Flood rounds and file size (MiB), overriding the mode's defaults (8 × 200 full, 4 × 50 quick). */
  floodRounds?: number;
  floodMb?: number;
  /** Run LocalPtyProvider daemons under `node --cpu-prof`, profiles written here when they exit. */
  profileStubDir?: string;
}

/** Everything the scenarios share: the sshd, a throwaway relay HOME, a data dir the test user can read. */
export interface BenchEnv {
  opts: BenchOptions;
  sshd: SshdInstance;
  /** Readable (0755) by the sshd login user; removed at the end. */
  dataDir: string;
  relayHome: string;
  /** The remote daemon's private runtime dir (one daemon for the whole run). */
  runtimeDir: string;
  /** Local runtime dirs for LocalPtyProvider daemons live under this. */
  localRoot: string;
  /** Extra process trees that belong to the bench (more sshd instances), for the others' CPU figure. */
  ownPids: Set<number>;
  log: ReturnType<typeof createLogger>;
}

export function makeDirs(): { dataDir: string; relayHome: string; localRoot: string; cleanup(): void } {
  const dataDir = mkdtempSync(join(tmpdir(), 'ptyrelay-bench-data-'));
  chmodSync(dataDir, 0o755);
  const relayHome = mkdtempSync(join(tmpdir(), 'ptyrelay-bench-home-'));
  mkdirSync(join(relayHome, '.ssh'), { mode: 0o700 });
  // The relay side never reads the developer's ~/.ssh (config, keys, known_hosts).
  process.env.HOME = relayHome;
  const localRoot = mkdtempSync(join(tmpdir(), 'ptyrelay-bench-local-'));
  return {
    dataDir,
    relayHome,
    localRoot,
    cleanup() {
      for (const d of [dataDir, relayHome, localRoot]) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** Host settings for a harness sshd (the tests' own helper). */
export { hostFor as hostConfig } from '../../test/support/ssh-fixture.js';

export function sshProvider(
  env: BenchEnv,
  hosts: Record<string, SshHostConfig>,
  extra: Partial<SshPtyProviderOptions> = {},
): SshPtyProvider {
  return new SshPtyProvider({
    hosts,
    daemonArgs: ['--runtime-dir', env.runtimeDir],
    log: env.log,
    ...extra,
  });
}

/** `--cpu-prof` is refused in NODE_OPTIONS, so the daemon is started here with it; the provider then finds it. */
export async function startProfiledDaemon(
  runtimeDir: string,
  profileDir: string,
  extraArgs: string[] = [],
): Promise<void> {
  mkdirSync(profileDir, { recursive: true });
  mkdirSync(runtimeDir, { recursive: true, mode: 0o700 });
  const child = spawn(
    process.execPath,
    [
      `--cpu-prof`,
      `--cpu-prof-interval=100`,
      `--cpu-prof-dir=${profileDir}`,
      stubBundlePath(),
      'daemon',
      '--runtime-dir',
      runtimeDir,
      ...extraArgs,
    ],
    { detached: true, stdio: 'ignore' },
  );
  child.unref();
  // Whatever the socket is named (it carries the protocol and build), it appears in the runtime dir.
  const answers = () =>
    Promise.all(
      readdirSync(runtimeDir)
        .filter((n) => n.endsWith('.sock'))
        .map(
          (n) =>
            new Promise<boolean>((resolve) => {
              const s = connect(join(runtimeDir, n));
              s.once('connect', () => {
                s.destroy();
                resolve(true);
              });
              s.once('error', () => resolve(false));
            }),
        ),
    ).then((xs) => xs.some(Boolean));
  const deadline = Date.now() + 10_000;
  while (!(await answers())) {
    if (Date.now() > deadline) throw new Error('profiled daemon did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
}

let localCount = 0;
/**
 * A LocalPtyProvider with its own, already running daemon (shut it down with `shutdownDaemon()`,
 * which also writes its CPU profile under `--profile-stub`).
 */
export async function localProvider(env: BenchEnv): Promise<LocalPtyProvider> {
  const runtimeDir = join(env.localRoot, `run-${++localCount}`);
  if (env.opts.profileStubDir) await startProfiledDaemon(runtimeDir, env.opts.profileStubDir);
  const p = new LocalPtyProvider({ runtimeDir, log: env.log });
  await p.listProcesses();
  return p;
}

/** A known_hosts file naming the sshd's host key at another port (a proxy in front of it). */
export function knownHostsFor(env: BenchEnv, port: number): string {
  const path = join(env.relayHome, '.ssh', `known_hosts_${port}`);
  writeFileSync(path, `[127.0.0.1]:${port} ${env.sshd.hostPublicKey}\n`, { mode: 0o600 });
  return path;
}

/** OpenSSH client arguments up to and including the destination (no user or system config). */
export function sshArgs(
  sshd: SshdInstance,
  opts: { port?: number; knownHostsFile?: string; tty?: boolean } = {},
): string[] {
  return [
    ...(opts.tty === false ? ['-T'] : ['-tt']),
    '-F',
    '/dev/null',
    '-i',
    sshd.userKeyPath,
    '-p',
    String(opts.port ?? sshd.port),
    '-o',
    `UserKnownHostsFile=${opts.knownHostsFile ?? sshd.knownHostsFile}`,
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'LogLevel=ERROR',
    `${sshd.user}@127.0.0.1`,
  ];
}
