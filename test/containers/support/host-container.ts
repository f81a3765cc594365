/**
 * One containerized build machine (the host image of test/containers/images): host networking,
 * sshd on its own 127.0.0.1 port, the login user `dev` with the test's key. /tmp and /run are
 * tmpfs, as on a real machine, so a restart (a reboot) wipes the stub's runtime dir and daemon.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import type { SshHostConfig } from '../../../relay/ssh/ssh-pty-provider.js';

export const LOGIN_USER = 'dev';
/** The stub's runtime dir on the host: on the tmpfs, so a reboot takes it away. */
export const REMOTE_RUNTIME_DIR = '/tmp/ptyrelay-run';
/** Where the stub's persistent state (cold-restore records) lives for LOGIN_USER. */
export const REMOTE_RESTORE_DIR = `/home/${LOGIN_USER}/.local/state/ptyrelay/restore`;
const SSHD_READY = /Server listening on 127\.0\.0\.1 port \d+/;
const START_TIMEOUT_MS = 60_000;
const LOOPBACK = '127.0.0.1';

/** A user key pair for the relay side, in a temp dir. */
export interface RelayKey {
  dir: string;
  privateKeyPath: string;
  publicKey: string;
  cleanup(): void;
}

export function makeRelayKey(): RelayKey {
  const dir = mkdtempSync(join(tmpdir(), 'ptr-ct-key-'));
  const privateKeyPath = join(dir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'ptyrelay-test', '-f', privateKeyPath]);
  return {
    dir,
    privateKeyPath,
    publicKey: readFileSync(`${privateKeyPath}.pub`, 'utf8').trim(),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A free TCP port on 127.0.0.1 (the kernel's pick, released at once for sshd to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, LOOPBACK, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface HostContainer {
  container: StartedTestContainer;
  port: number;
  /** SSH config for the relay: this host's port, the key, a known_hosts file with its host key. */
  ssh: SshHostConfig;
  /** Runs a command in the container as LOGIN_USER; returns stdout (throws on failure). */
  run(cmd: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a host container from `image` and waits for its sshd. */
export async function startHost(image: string, key: RelayKey, name: string): Promise<HostContainer> {
  const port = await freePort();
  const container = await new GenericContainer(image)
    .withNetworkMode('host')
    .withEnvironment({ SSH_PORT: String(port), AUTHORIZED_KEY: key.publicKey })
    .withTmpFs({ '/tmp': 'rw,exec,mode=1777', '/run': 'rw,mode=755' })
    .withLabels({ 'ptyrelay.test': name })
    .withWaitStrategy(Wait.forLogMessage(SSHD_READY))
    .withStartupTimeout(START_TIMEOUT_MS)
    .start();
  const hostKey = (await container.exec(['cat', '/etc/ssh/ssh_host_ed25519_key.pub'])).stdout
    .trim()
    .split(' ')
    .slice(0, 2)
    .join(' ');
  const knownHostsFile = join(key.dir, `known_hosts-${name}`);
  writeFileSync(knownHostsFile, `[${LOOPBACK}]:${port} ${hostKey}\n`);
  const run = async (cmd: string) => {
    const r = await container.exec(['sh', '-c', cmd], {
      user: LOGIN_USER,
      env: { HOME: `/home/${LOGIN_USER}` },
    });
    if (r.exitCode !== 0) throw new Error(`${cmd} failed in ${name} (${r.exitCode}): ${r.stderr}`);
    return r.stdout;
  };
  return {
    container,
    port,
    ssh: {
      host: LOOPBACK,
      port,
      user: LOGIN_USER,
      identityFile: key.privateKeyPath,
      knownHostsFile,
      useAgent: false,
    },
    run,
    stop: async () => {
      await container.stop({ timeout: 0, remove: true });
    },
  };
}
