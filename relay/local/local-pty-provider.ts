import { readFileSync } from 'node:fs';
import type { PtyProcessInfo } from '../../provider/contract.js';
import {
  connectDaemonSocket,
  connectOrStartDaemon,
  liveLegacyDaemons,
} from '../../provider/daemon-runtime/daemon-launcher.js';
import { tryConnect } from '../../provider/daemon-runtime/socket-probe.js';
import { daemonSocketPath, defaultRuntimeDir } from '../../provider/daemon-runtime/stub-paths.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import { stubBuildId, stubBundlePath } from '../core/stub-bundle.js';
import { type LinkPolicy, StubBackedProvider } from '../stub-link/stub-backed-provider.js';
import { StubClient } from '../stub-link/stub-client.js';

/** How long shutdownDaemon waits for the daemon process to exit after its link closed. */
const DAEMON_EXIT_WAIT_MS = 15_000;

/** Resolves once `pid` runs no more (a zombie counts as gone), or after `ms`. */
async function processExited(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return; // no such process
    }
    if (/\) [ZX] /.test(stat)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface LocalPtyProviderOptions {
  /** Directory of the daemon socket; default `$XDG_RUNTIME_DIR/ptyrelay` or `~/.cache/ptyrelay/run`. */
  runtimeDir?: string;
  /** Extra daemon flags used when this provider has to start it (e.g. `--idle-exit-ms 5000`). */
  daemonArgs?: string[];
  /** Path of the stub bundle; default the package's `dist/stub/stub.cjs`. */
  stubPath?: string;
  log?: Logger;
  /** Reconnect ladder, dead-link detection and flow-control settings. */
  link?: LinkPolicy;
  /** Identity toward the daemon; reuse it across restarts to keep credit claims (default: random). */
  relayId?: string;
}

/**
 * The built-in `local` host: the same stub daemon as remote hosts, started as a local detached
 * process and reached over its Unix socket. Sessions outlive this provider and its process.
 */
export class LocalPtyProvider extends StubBackedProvider {
  protected readonly defaultHost = 'local';
  protected readonly log: Logger | undefined;
  readonly runtimeDir: string;
  private readonly stubPath: string;

  constructor(private readonly opts: LocalPtyProviderOptions = {}) {
    super();
    this.runtimeDir = opts.runtimeDir ?? defaultRuntimeDir();
    this.stubPath = opts.stubPath ?? stubBundlePath();
    this.log = opts.log;
    if (opts.link) this.linkPolicy = opts.link;
    if (opts.relayId) this.relayId = opts.relayId;
  }

  protected async openLink(key: string): Promise<StubClient> {
    const [host, build] = key.split('#');
    if (host !== 'local') throw new PtyRelayError('UNKNOWN_HOST', `LocalPtyProvider has no host ${host}`);
    let socket: Awaited<ReturnType<typeof connectOrStartDaemon>>;
    const own = stubBuildId(this.stubPath);
    try {
      socket = build
        ? await connectDaemonSocket(daemonSocketPath(this.runtimeDir, build))
        : await connectOrStartDaemon(this.stubPath, this.runtimeDir, this.opts.daemonArgs ?? []);
    } catch (err) {
      if (isPtyRelayError(err)) throw err;
      throw new PtyRelayError('DAEMON_UNAVAILABLE', (err as Error).message);
    }
    if (!build)
      this.noteLegacy(
        'local',
        (await liveLegacyDaemons(this.runtimeDir, own)).map((d) => d.buildId),
      );
    const client = new StubClient(socket, {
      role: 'local-provider',
      buildId: own,
      ...this.linkIdentity(key),
    });
    await client.ready;
    return client;
  }

  /**
   * Connects to this machine's daemon if one runs and answers (never starts one for nothing): its terminals are then published like after any connect. Resolves whether it did.
   */
  async adopt(): Promise<boolean> {
    if (this.linkState('local').state !== 'idle') return true;
    // A daemon that answers (a socket file alone may be stale: no daemon is started for it).
    const own = stubBuildId(this.stubPath);
    const probe = await tryConnect(daemonSocketPath(this.runtimeDir, own));
    probe?.destroy();
    if (!probe && (await liveLegacyDaemons(this.runtimeDir, own)).length === 0) return false;
    try {
      await this.listHost('local');
      return true;
    } catch (err) {
      this.log?.info({ err: (err as Error).message }, 'local daemon not adopted at start');
      return false;
    }
  }

  override async listProcesses(): Promise<PtyProcessInfo[]> {
    return this.listHost('local');
  }

  /** Info about the running daemon (pid, build, counts). */
  async daemonInfo() {
    return (await this.link('local')).call('daemonInfo', {});
  }

  /** Stops the daemon and every session in it (tests, administration). */
  /**
   * Ends the daemon and its sessions; resolves once the daemon process is gone. The daemon closes
   * its links first and then ends its sessions and removes their cold-restore records: a caller
   * that removed the state dir when the link closed raced those last writes.
   */
  async shutdownDaemon(): Promise<void> {
    const c = await this.link('local');
    const gone = new Promise<void>((resolve) => {
      if (!c.isOpen) resolve();
      else c.closed.on(() => resolve());
    });
    const pid = await c
      .call('daemonInfo', {})
      .then((i) => i.pid)
      .catch(() => undefined);
    await c.call('daemonShutdown', {}).catch(() => {});
    // Stop reconnecting to a daemon we are deliberately ending (it exits right after answering).
    this.hostLinks.get('local')?.close();
    this.hostLinks.delete('local');
    await gone;
    if (pid !== undefined) await processExited(pid, DAEMON_EXIT_WAIT_MS);
  }

  async dispose(): Promise<void> {
    this.disposeLinks();
  }
}
