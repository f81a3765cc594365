import type { LookupFunction } from 'node:net';
import type { Logger } from '../core/log.js';
import type { UploadMethod } from '../deploy/remote-fs.js';
import { collectStubArtifacts, type StubPlatform } from '../deploy/stub-artifacts.js';
import { type DeployProgress, type DeployResult, StubDeployer } from '../deploy/stub-deployer.js';
import type { RaceAttempt } from '../stub-link/attempt-race.js';
import { type ResolvedHost, resolveHost, type SshHostConfig } from './host-config.js';
import { connectSsh, type SshConnection } from './host-connection.js';
import { withHostHint } from './host-errors.js';
import { openSocketChannel, openStubChannel, type StubChannel } from './ssh-stub-channel.js';

/**
 * SSH handshake limit for reconnect attempts (first contact keeps the configured 30 s): an attempt
 * made while the network still swallows packets ends soon even if no fresh attempt replaces it.
 */
const RECONNECT_ATTEMPT_TIMEOUT_MS = 2000;

/** Connection and deployment progress of one host. */
export type HostSetupProgress = DeployProgress | { step: 'connect' | 'connected' | 'link'; message: string };

export interface HostSetupOptions {
  /** Reports a step (SshPtyProvider logs it and passes it on). */
  progress: (host: string, p: HostSetupProgress) => void;
  /** A ProxyJump that names another configured host. */
  resolveJump: (spec: string) => ResolvedHost | undefined;
  /** Whether `host`'s first contact may only use an intact install (its adoption at relay start). */
  adoptOnly: (host: string) => boolean;
  /** Always the exec bridge, never streamlocal forwarding (tests). */
  preferExec?: boolean;
  /** Stub bundle to deploy instead of this package's. */
  stubPath?: string;
  lookup?: LookupFunction;
}

/**
 * The steps of one attempt to reach a host: its SSH connection, the stub's install, the channel
 * to its daemon. What the attempt that won learnt is kept for the next one (a reconnect): the
 * install it verified, the upload method that worked and the daemon's socket. SshPtyProvider runs
 * the steps for each attempt and registers the winner.
 */
export class HostSetup {
  private readonly deployed = new Map<string, DeployResult>();
  /** The upload method that last worked on each host: the next deploy tries it first. */
  private readonly uploadMethods = new Map<string, UploadMethod>();
  /** Daemon socket of each host as last reached by streamlocal forwarding. */
  private readonly knownSocket = new Map<string, string>();

  constructor(private readonly opts: HostSetupOptions) {}

  /** The SSH connection of one attempt, and when it started (for the log's timings). */
  async connect(
    host: string,
    cfg: SshHostConfig,
    attempt: RaceAttempt,
    log: Logger,
  ): Promise<{ ssh: SshConnection; t0: number }> {
    const resolved = resolveHost(cfg);
    this.opts.progress(host, {
      step: 'connect',
      message: `connecting to ${resolved.user}@${resolved.hostName}:${resolved.port}`,
    });
    const t0 = Date.now();
    // A reconnect must not hang on a handshake whose packets a dead network swallowed: fail fast,
    // and let the ladder try again.
    const reconnecting = this.deployed.has(host);
    const timed = reconnecting
      ? { ...resolved, connectTimeoutMs: Math.min(resolved.connectTimeoutMs, RECONNECT_ATTEMPT_TIMEOUT_MS) }
      : resolved;
    const ssh = await connectSsh(timed, {
      log,
      resolveJump: this.opts.resolveJump,
      signal: attempt.signal,
      onReceive: () => attempt.progress(),
      lookup: this.opts.lookup,
    }).catch((err: unknown) => {
      throw withHostHint(host, err);
    });
    this.opts.progress(host, { step: 'connected', message: `connected in ${Date.now() - t0} ms` });
    return { ssh, t0 };
  }

  /** The host's install: the one verified before (a reconnect), else a full deploy. */
  async deploy(
    host: string,
    cfg: SshHostConfig,
    ssh: SshConnection,
    log: Logger,
    daemonArgs: string[],
  ): Promise<DeployResult> {
    const stubPath = this.opts.stubPath;
    const deploy =
      this.deployed.get(host) ??
      (await new StubDeployer(ssh.client, {
        log,
        onProgress: (p: DeployProgress) => this.opts.progress(host, p),
        // An intact install also gets its daemon ensured in the probe's command (one exec).
        ensureDaemon: this.opts.preferExec ? undefined : daemonArgs,
        installDir: cfg.installDir,
        uploadMethod: this.uploadMethods.get(host),
        adoptOnly: () => this.opts.adoptOnly(host),
        ...(stubPath ? { artifacts: (p: StubPlatform) => collectStubArtifacts(p, stubPath) } : {}),
      }).deploy());
    if (deploy.method) {
      this.uploadMethods.set(host, deploy.method);
      log.info(
        { method: deploy.method, installDir: deploy.installDir },
        `stub deployed over ${deploy.method}`,
      );
    }
    return deploy;
  }

  /**
   * On a reconnect the daemon is almost always still there, and on first contact the probe's
   * command may have ensured it: forward straight to its socket (saves a remote command and a
   * node start for `ensure`); otherwise, or if that fails, ensure it runs.
   */
  async channel(
    host: string,
    ssh: SshConnection,
    deploy: DeployResult,
    log: Logger,
    daemonArgs: string[],
  ): Promise<StubChannel> {
    // First contact may have ensured the daemon already (a one-shot hint: later links use `known`).
    const ensured = deploy.daemon;
    deploy.daemon = undefined;
    const known = this.knownSocket.get(host) ?? ensured?.socketPath;
    if (known && !this.opts.preferExec) {
      try {
        const ch = await openSocketChannel(ssh.client, [], known, { streamlocalOnly: true });
        return { ...ch, socketPath: known, legacy: ensured?.legacy ?? [] };
      } catch {
        // the daemon went away (or forwarding is refused): start it the long way
      }
    }
    return openStubChannel(ssh.client, deploy.nodePath, deploy.stubPath, {
      log,
      daemonArgs,
      preferExec: this.opts.preferExec,
    });
  }

  /** What the winning attempt learnt: its install, and the daemon's socket if forwarding reached it. */
  remember(host: string, deploy: DeployResult, channel: StubChannel): void {
    this.deployed.set(host, deploy);
    if (channel.via === 'streamlocal') this.knownSocket.set(host, channel.socketPath);
  }

  /** A failed attempt may mean the install is gone: the next one checks it again. */
  forgetInstall(host: string): void {
    this.deployed.delete(host);
  }

  /** Everything learnt about `host` (its settings changed, or it was removed). */
  forget(host: string): void {
    this.deployed.delete(host);
    this.knownSocket.delete(host);
    this.uploadMethods.delete(host);
  }
}
