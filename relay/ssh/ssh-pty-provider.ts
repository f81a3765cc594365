import type { LookupFunction } from 'node:net';
import type { PtyProcessInfo } from '../../provider/contract.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { createLogger, type Logger } from '../core/log.js';
import type { DeployResult } from '../deploy/stub-deployer.js';
import type { RaceAttempt } from '../stub-link/attempt-race.js';
import { type ReachabilityProbe, sshBannerProbe } from '../stub-link/reachability-probe.js';
import { type LinkPolicy, StubBackedProvider } from '../stub-link/stub-backed-provider.js';
import { StubClient } from '../stub-link/stub-client.js';
import { hostOfLinkKey } from '../stub-link/terminal-ids.js';
import { AdoptionUses } from './adoption-uses.js';
import { firstHop, type ResolvedHost, resolveHost, type SshHostConfig } from './host-config.js';
import type { SshConnection } from './host-connection.js';
import { hostDaemonArgs } from './host-daemon-args.js';
import { sshLost } from './host-errors.js';
import { type HostKeyStatus, inspectHostKey, trustHostKey } from './host-key-trust.js';
import { HostSetup, type HostSetupProgress } from './host-setup.js';
import { openSocketChannel, type StubChannel } from './ssh-stub-channel.js';
import { SSH2_PINNED, ssh2ShapeProblem } from './ssh2-modules.js';

/**
 * Reconnect attempts to one host at once: a ladder step that finds the pending ones silent starts a
 * fresh one beside them, so an attempt swallowed by a dead network does not hold up the reconnect.
 */
const RACING_RECONNECT_ATTEMPTS = 3;

export type { SshHostConfig } from './host-config.js';

/** A step of reaching a host: connecting, deploying the stub, the link to its daemon. */
export type { HostSetupProgress } from './host-setup.js';

export interface SshPtyProviderOptions {
  hosts: Record<string, SshHostConfig>;
  log?: Logger;
  /** Connection and deployment progress (the CLI prints it). */
  onProgress?: (host: string, p: HostSetupProgress) => void;
  /** Flags for a daemon this relay starts on a host (e.g. `--idle-exit-ms`). */
  daemonArgs?: string[];
  /** Always use the exec bridge instead of streamlocal forwarding (tests). */
  preferExec?: boolean;
  /** Reconnect ladder, dead-link detection and flow-control settings. */
  link?: LinkPolicy;
  /** Identity toward daemons; reuse it across restarts to keep credit claims (default: random). */
  relayId?: string;
  /** Stub bundle to deploy (default: this package's `dist/stub/stub.cjs`); tests deploy other builds. */
  stubPath?: string;
  /** Name resolver for host names (default: the system's; tests inject one so no DNS query leaves). */
  lookup?: LookupFunction;
}

interface HostLink {
  ssh: SshConnection;
  client: StubClient;
  deploy: DeployResult;
  via: 'streamlocal' | 'exec';
}

/**
 * IPtyProvider for SSH hosts: one ssh2 connection per host carrying every session of that
 * host; the stub is deployed on first use; ids are `<host>/<id>`.
 */
export class SshPtyProvider extends StubBackedProvider {
  protected readonly defaultHost: string;
  private readonly links = new Map<string, HostLink>();
  private readonly legacySockets = new Map<string, string>();
  /** What used each adopted host since its adoption began (releaseIfEmpty). */
  private readonly adoptionUses = new AdoptionUses();
  /** Hosts being adopted at relay start: their first contact uses an intact install only. */
  private readonly adopting = new Set<string>();
  /** How each host is reached, and what the last attempt learnt (host-setup.ts). */
  private readonly setup: HostSetup;
  protected readonly log: Logger;
  protected override readonly reconnectAttempts = RACING_RECONNECT_ATTEMPTS;
  protected override readonly failFirstContact = true;

  constructor(private opts: SshPtyProviderOptions) {
    super();
    const names = Object.keys(opts.hosts);
    if (names.length === 0)
      throw new PtyRelayError('CONFIG_INVALID', 'SshPtyProvider needs at least one host');
    checkHostNames(names);
    this.defaultHost = names[0];
    this.log = opts.log ?? createLogger({ name: 'ptyrelay-ssh' });
    const ssh2Problem = ssh2ShapeProblem();
    if (ssh2Problem) this.log.warn({ library: 'ssh2', pinned: SSH2_PINNED }, ssh2Problem);
    if (opts.link) this.linkPolicy = opts.link;
    if (opts.relayId) this.relayId = opts.relayId;
    this.setup = new HostSetup({
      progress: (h, p) => this.progress(h, p),
      resolveJump: this.resolveJump,
      adoptOnly: (h) => this.adopting.has(h),
      preferExec: opts.preferExec,
      stubPath: opts.stubPath,
      lookup: opts.lookup,
    });
  }

  get hostNames(): string[] {
    return Object.keys(this.opts.hosts);
  }

  /**
   * Replaces the configured hosts (a config reload). A removed host's links close (its terminals
   * keep running in its daemon; adding it back finds them); a changed host's connection closes
   * and its link reconnects with the new settings, re-attaching its sessions as after an outage;
   * unchanged hosts keep their links.
   */
  setHosts(hosts: Record<string, SshHostConfig>): { added: string[]; removed: string[]; changed: string[] } {
    checkHostNames(Object.keys(hosts));
    const before = this.opts.hosts;
    const added = Object.keys(hosts).filter((h) => !Object.hasOwn(before, h));
    const removed = Object.keys(before).filter((h) => !Object.hasOwn(hosts, h));
    const changed = Object.keys(hosts).filter(
      (h) => Object.hasOwn(before, h) && JSON.stringify(before[h]) !== JSON.stringify(hosts[h]),
    );
    this.opts = { ...this.opts, hosts: { ...hosts } };
    for (const h of removed) this.closeHost(h, true);
    for (const h of changed) this.closeHost(h, false);
    return { added, removed, changed };
  }

  /**
   * Connects to `host` if this build's stub is already installed there (never deploys): its
   * terminals are then published like after any connect. Resolves whether it connected.
   */
  async adopt(host: string): Promise<boolean> {
    if (this.linkState(host).state !== 'idle') return true;
    this.adoptionUses.began(host);
    this.adopting.add(host);
    try {
      await super.link(host);
      return true;
    } catch (err) {
      this.log.info({ host, err: (err as Error).message }, 'not adopted at start');
      return false;
    } finally {
      this.adopting.delete(host);
    }
  }

  /**
   * Closes the link to an adopted `host` that holds no running terminal and that nothing else used
   * since its adoption began (once its terminals are published, an idle relay keeps no SSH
   * connection for it; the next use connects again). Resolves whether it closed.
   */
  async releaseIfEmpty(host: string): Promise<boolean> {
    const client = this.hostLinks.get(host)?.connectedClient;
    const uses = this.adoptionUses;
    if (!client || uses.usedSince(host) || this.daemons.legacyOf(host).length > 0) return false;
    // Asked on the link itself: the release's own listing is no use of the host.
    const { sessions } = await client.call('list', {});
    // Exited terminals are published (their exit codes) but need no link.
    if (sessions.some((t) => !t.exited)) return false;
    // Listings under way (the catalog's on connect, a client's) finish on this link first; then
    // checked and closed in one turn: a use that comes later connects again.
    return uses.afterListings(host, () => {
      if (uses.usedSince(host) || this.hostLinks.get(host)?.connectedClient !== client) return false;
      this.closeHost(host, true);
      this.linkStateEvents.emit({ host, state: { state: 'idle' } });
      return true;
    });
  }

  /** The host's terminals; counted as under way until it settles (see {@link releaseIfEmpty}). */
  override listHost(host: string): Promise<PtyProcessInfo[]> {
    return this.adoptionUses.listing(host, super.listHost(host));
  }

  /**
   * Every use of a host but adoption: it may deploy. A use that arrives while the host is being
   * adopted turns that attempt into a full one; one that joined an adoption attempt as it found
   * no install asks again (and deploys).
   */
  protected override link(host: string): Promise<StubClient> {
    this.adoptionUses.use(host);
    return this.reach(host);
  }

  /** A listing is no lasting use: it does not keep an adopted host's link (releaseIfEmpty). */
  protected override listingLink(host: string): Promise<StubClient> {
    return this.reach(host);
  }

  private async reach(host: string): Promise<StubClient> {
    this.adopting.delete(hostOfLinkKey(host));
    try {
      return await super.link(host);
    } catch (err) {
      if (isPtyRelayError(err, 'STUB_NOT_INSTALLED')) return super.link(host);
      throw err;
    }
  }

  /** Closes `host`'s SSH connection and forgets how it was reached; `forget` also ends its links. */
  private closeHost(host: string, forget: boolean): void {
    this.setup.forget(host);
    this.links.get(host)?.ssh.close();
    this.links.delete(host);
    if (forget) {
      for (const key of [...this.hostLinks.keys()]) {
        if (key !== host && !key.startsWith(`${host}#`)) continue;
        this.hostLinks.get(key)?.close();
        this.hostLinks.delete(key);
      }
    } else this.dropLink(host);
  }

  /** How the host's link is carried, when connected. */
  linkInfo(host: string):
    | {
        via: 'streamlocal' | 'exec';
        deploy: DeployResult;
        daemonPid?: number;
        /** Writes the relay made on the link's channel and data packets it received (counters). */
        packets: { sent: number; received: number };
      }
    | undefined {
    const l = this.links.get(host);
    if (!l) return undefined;
    const packets = { sent: l.client.writes, received: l.client.reads };
    return { via: l.via, deploy: l.deploy, daemonPid: l.client.daemonHello?.pid, packets };
  }

  protected openLink(key: string, attempt: RaceAttempt): Promise<StubClient> {
    const [host, build] = key.split('#');
    const cfg = this.opts.hosts[host];
    if (!cfg) return Promise.reject(new PtyRelayError('UNKNOWN_HOST', `no host named ${host} is configured`));
    return build ? this.openLegacy(host, build) : this.open(host, cfg, attempt);
  }

  /** A link to an older build's daemon on `host`, over the host's current SSH connection. */
  private async openLegacy(host: string, build: string): Promise<StubClient> {
    await this.link(host);
    const primary = this.links.get(host);
    const socketPath = this.legacySockets.get(`${host}#${build}`);
    if (!primary || !socketPath)
      throw new PtyRelayError('NOT_FOUND', `no daemon of build ${build} on ${host}`);
    const { nodePath, stubPath } = primary.deploy;
    const argv = [nodePath, stubPath, 'connect', '--socket', socketPath];
    const ch = await openSocketChannel(primary.ssh.client, argv, socketPath, {
      preferExec: this.opts.preferExec,
    });
    const client = new StubClient(ch.stream, {
      role: 'ssh-relay',
      buildId: primary.deploy.buildId,
      ...this.linkIdentity(`${host}#${build}`),
    });
    await client.ready;
    return client;
  }

  /**
   * One attempt at the host's link. Reconnect attempts may race: an aborted one closes its
   * connection at once, and only the attempt that claims the race registers the link.
   */
  private async open(host: string, cfg: SshHostConfig, attempt: RaceAttempt): Promise<StubClient> {
    const log = this.log.child({ host });
    const { ssh, t0 } = await this.setup.connect(host, cfg, attempt, log);
    const closeOnAbort = () => ssh.close();
    attempt.signal.addEventListener('abort', closeOnAbort, { once: true });
    let dropped = false;
    ssh.client.once('close', () => {
      dropped = true;
    });
    try {
      attempt.signal.throwIfAborted();
      const daemonArgs = this.daemonArgsFor(cfg);
      const deploy = await this.setup.deploy(host, cfg, ssh, log, daemonArgs);
      const channel = await this.setup.channel(host, ssh, deploy, log, daemonArgs);
      attempt.progress();
      const client = new StubClient(channel.stream, {
        role: 'ssh-relay',
        buildId: deploy.buildId,
        ...this.linkIdentity(host),
      });
      client.onReceive = () => attempt.progress();
      await client.ready;
      // Only the winning attempt gets past this line: a losing one never registers anything.
      attempt.claim();
      attempt.signal.removeEventListener('abort', closeOnAbort);
      this.register(host, { ssh, client, deploy, via: channel.via }, channel);
      this.progress(host, {
        step: 'link',
        message: `stub link up via ${channel.via} (daemon pid ${client.daemonHello?.pid})`,
      });
      log.info({ via: channel.via, uploaded: deploy.uploaded, ms: Date.now() - t0 }, 'host ready');
      return client;
    } catch (err) {
      ssh.close();
      // A failure may mean the install is gone: check it again next time (not when merely outraced).
      if (!attempt.signal.aborted) this.setup.forgetInstall(host);
      // The host let us in, then dropped the connection: transient, whatever step it broke.
      if (dropped && !attempt.signal.aborted) throw droppedDuringSetup(host, err);
      throw err;
    }
  }

  /** Progress always reaches the log (step, bytes uploaded); a caller may also show it. */
  private progress(h: string, p: HostSetupProgress): void {
    this.log.info({ host: h, ...p }, `[${h}] ${p.message}`);
    this.opts.onProgress?.(h, p);
  }

  /** What `host` presents now (no login) and what known_hosts says about it. */
  async inspectHostKey(host: string): Promise<HostKeyStatus> {
    const { key: _key, ...status } = await inspectHostKey(this.resolved(host), this.connectOptions(host));
    return status;
  }

  /** Records `host`'s key once a person confirmed `fingerprint` (`replace`: over a changed one). */
  trustHostKey(host: string, fingerprint: string, replace: boolean): Promise<HostKeyStatus> {
    return trustHostKey(this.resolved(host), fingerprint, replace, this.connectOptions(host));
  }

  /** A ProxyJump that names another configured host uses that host's settings (keys, known_hosts). */
  private readonly resolveJump = (spec: string): ResolvedHost | undefined => {
    const named = this.opts.hosts[spec];
    return named ? resolveHost(named) : undefined;
  };

  private resolved(host: string): ResolvedHost {
    const cfg = this.opts.hosts[host];
    if (!cfg) throw new PtyRelayError('UNKNOWN_HOST', `no host named ${host} is configured`, { host });
    return resolveHost(cfg);
  }

  private connectOptions(host: string) {
    return {
      log: this.log.child({ host }),
      lookup: this.opts.lookup,
      resolveJump: this.resolveJump,
    };
  }

  /** An SSH banner from the host, or its first jump host, says it is back. */
  protected override reachabilityProbe(host: string): ReachabilityProbe | undefined {
    const cfg = this.opts.hosts[host];
    if (!cfg) return undefined;
    const lookup = this.opts.lookup;
    return (signal) => {
      let first: { hostName: string; port: number };
      try {
        first = firstHop(resolveHost(cfg), this.resolveJump);
      } catch (err) {
        this.log.debug({ host, err: (err as Error).message }, 'no reachability probe');
        return Promise.resolve(false);
      }
      return sshBannerProbe(first.hostName, first.port, lookup)(signal);
    };
  }

  /** Makes a won attempt's connection the host's link (one at a time: the race has one winner). */
  private register(host: string, link: HostLink, channel: StubChannel): void {
    this.setup.remember(host, link.deploy, channel);
    for (const l of channel.legacy) this.legacySockets.set(`${host}#${l.buildId}`, l.socketPath);
    this.noteLegacy(
      host,
      channel.legacy.map((l) => l.buildId),
    );
    this.links.set(host, link);
    // Why the link went, for the status a person sees: the SSH connection's own error, or the host
    // closing it (sshd gone), rather than "stub link closed".
    let sshError: Error | undefined;
    let sshClosed = false;
    const reason = (): PtyRelayError | undefined =>
      sshError ? sshLost(host, sshError) : sshClosed ? sshLost(host) : undefined;
    link.client.closeReason = reason;
    link.ssh.client.on('error', (e) => {
      sshError ??= e;
    });
    const drop = () => {
      if (this.links.get(host) === link) this.links.delete(host);
      link.client.close(reason());
      link.ssh.close();
    };
    link.ssh.client.once('close', () => {
      sshClosed = true;
      drop();
    });
    link.client.closed.on(drop);
  }

  /** Flags for a daemon this relay starts on a host: the provider's, plus the host's own dirs. */
  private daemonArgsFor(cfg: SshHostConfig): string[] {
    return hostDaemonArgs(this.opts.daemonArgs ?? [], cfg);
  }

  /** Drops the SSH connection of a host as a network failure would; the link reconnects and reattaches. */
  dropConnection(host: string): void {
    const l = this.links.get(host);
    this.links.delete(host);
    l?.ssh.close();
    l?.client.close();
  }

  /** Ends a host's daemon and every session in it (tests, administration). */
  async shutdownDaemon(host: string): Promise<void> {
    const c = await this.link(host);
    await c.call('daemonShutdown', {}).catch(() => {});
    this.hostLinks.get(host)?.close();
    this.hostLinks.delete(host);
    this.links.get(host)?.ssh.close();
    this.links.delete(host);
  }

  override async listProcesses(): Promise<PtyProcessInfo[]> {
    const all = await Promise.all(
      this.hostNames.map((h) =>
        this.listHost(h).catch((err) => {
          this.log.warn({ host: h, err: (err as Error).message }, 'cannot list host');
          return [] as PtyProcessInfo[];
        }),
      ),
    );
    return all.flat();
  }

  async dispose(): Promise<void> {
    this.disposeLinks();
    for (const l of this.links.values()) l.ssh.close();
    this.links.clear();
  }
}

function checkHostNames(names: string[]): void {
  for (const n of names) {
    if (n.includes('/')) throw new PtyRelayError('CONFIG_INVALID', `host name ${n} must not contain '/'`);
  }
}

/** The error of a setup step whose connection the host closed after login (HostLink retries it). */
function droppedDuringSetup(host: string, err: unknown): PtyRelayError {
  const cause = err instanceof Error ? err.message : String(err);
  return new PtyRelayError(
    'LINK_CLOSED',
    `${host} closed the connection during setup, after login (${cause})`,
    {
      afterLogin: true,
      ...(err instanceof PtyRelayError ? { cause: err.code } : {}),
    },
  );
}
