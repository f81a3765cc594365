import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type SshHostConfig,
  SshPtyProvider,
  type SshPtyProviderOptions,
} from '../../relay/ssh/ssh-pty-provider.js';
import type { SshdInstance } from './sshd.js';

/**
 * A throwaway HOME for the relay side (so the developer's ~/.ssh never leaks into a test) and a
 * private daemon runtime dir on the host per test file (so files running in parallel do not share
 * a daemon).
 */
export function relayHome(): { home: string; cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), 'ptr-relay-home-'));
  mkdirSync(join(home, '.ssh'), { mode: 0o700 });
  process.env.HOME = home;
  return {
    home,
    cleanup: () => {
      rmSync(home, { recursive: true, force: true });
      removeRemoteRuntimeDirs();
    },
  };
}

/** Runtime dirs handed out by remoteRuntimeDir in this test file (the daemons' logs stay there). */
const runtimeDirs = new Set<string>();

/** Removes the remote runtime dirs of this file; call after its daemons were shut down. */
export function removeRemoteRuntimeDirs(): void {
  // Kept in the set: a later describe of the same file may still create (and remove) them.
  for (const dir of runtimeDirs) rmSync(dir, { recursive: true, force: true });
}

export function hostFor(sshd: SshdInstance, extra: Partial<SshHostConfig> = {}): SshHostConfig {
  return {
    host: '127.0.0.1',
    port: sshd.port,
    user: sshd.user,
    identityFile: sshd.userKeyPath,
    knownHostsFile: sshd.knownHostsFile,
    useAgent: false,
    ...extra,
  };
}

/**
 * A daemon runtime dir on the host (the login user creates it), in the run's TMPDIR; removed by
 * relayHome's cleanup.
 */
export function remoteRuntimeDir(tag: string): string {
  const dir = join(tmpdir(), `ptr-remote-${tag}-${process.pid}`);
  runtimeDirs.add(dir);
  return dir;
}

export function sshProvider(
  hosts: Record<string, SshHostConfig>,
  runtimeDir: string,
  extra: Partial<SshPtyProviderOptions> = {},
): SshPtyProvider {
  return new SshPtyProvider({ hosts, daemonArgs: ['--runtime-dir', runtimeDir], ...extra });
}
