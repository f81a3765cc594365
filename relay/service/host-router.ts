import type { HostProgress } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, LinkState, PtyProcessInfo, Unsubscribe } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import { DEFAULT_PALETTE, type TerminalPalette } from '../../provider/terminal-queries.js';
import { readinessDaemonArgs } from '../agents/agent-config.js';
import { historyDaemonArgs } from '../core/history-config.js';
import type { Logger } from '../core/log.js';
import type { HostKeyAdmin, HostRouter } from '../core/rpc-types.js';
import { creditFor } from '../flow/terminal-credit.js';
import { LocalPtyProvider } from '../local/local-pty-provider.js';
import type { SshHostConfig, SshPtyProvider } from '../ssh/ssh-pty-provider.js';
import { LOCAL_HOST, type RelayConfig } from './config.js';
import { HostLsp } from './host-lsp.js';

export interface HostRouterOptions {
  log?: Logger;
  /** Runtime directory of the local daemon (tests use a temporary one). */
  localRuntimeDir?: string;
  /** Stub bundle the providers run and deploy (default: this package's); tests run other builds. */
  stubPath?: string;
  /** Extra flags for daemons this relay starts, after those from the config (tests: `--state-dir`). */
  daemonArgs?: string[];
  /** The config file the hosts come from, named in UNKNOWN_HOST. */
  configFile?: string;
}

/** `--palette fg,bg,cursor`, only when it differs from the stub's default (short command lines). */
function paletteDaemonArgs(p: TerminalPalette): string[] {
  const d = DEFAULT_PALETTE;
  if (p.foreground === d.foreground && p.background === d.background && p.cursor === d.cursor) return [];
  return ['--palette', `${p.foreground},${p.background},${p.cursor}`];
}

/** What a config reload did to the SSH hosts. */
export interface HostsChange {
  added: string[];
  removed: string[];
  changed: string[];
}

/**
 * Routes host names to providers: `local` to a LocalPtyProvider, every configured SSH host to
 * one shared SshPtyProvider. Daemons this relay starts keep `limits.ringBytes` of output per
 * session. Nothing connects until a host is first used, and the SSH stack (ssh2) is loaded only
 * when an SSH host is configured. `applyHosts` takes a reloaded config's hosts: links to
 * unchanged hosts are kept.
 */
export class ConfigHostRouter implements HostRouter {
  private readonly local: LocalPtyProvider;
  private ssh: SshPtyProvider | undefined;
  private sshHosts: Record<string, SshHostConfig>;
  private readonly progress = new Emitter<HostProgress>();
  private readonly providerAdded = new Emitter<IPtyProvider>();
  private readonly hostsChanged = new Emitter<HostsChange>();
  private readonly link: { manualAck: boolean; maxInputAgeMs: number };
  private readonly daemonArgs: string[];
  /** Code navigation on the hosts `lsp` enables (docs/lsp.md). */
  readonly lsp: HostLsp;

  constructor(
    config: RelayConfig,
    private readonly opts: HostRouterOptions = {},
  ) {
    const f = config.flowControl;
    this.daemonArgs = [
      ...['--ring-bytes', String(config.limits.ringBytes)],
      ...['--background-ring-bytes', String(config.limits.backgroundRingBytes)],
      ...['--credit-window', String(f.creditWindow)],
      ...['--credit-window-max', String(f.creditWindowMax)],
      ...['--keep-tail', String(f.keepTailBytes)],
      ...['--pending-cap', String(f.stubPendingCap)],
      ...(config.agents ? readinessDaemonArgs(config.agents) : []),
      ...historyDaemonArgs(config.history),
      ...paletteDaemonArgs(config.terminal.palette),
      ...(opts.daemonArgs ?? []),
    ];
    // The service acknowledges output for its consumers (relay/flow/terminal-credit.ts), so a
    // program is paused only when every consumer that watches it is behind.
    this.link = { manualAck: true, maxInputAgeMs: config.input.maxQueueAgeMs };
    this.local = new LocalPtyProvider({
      link: this.link,
      runtimeDir: opts.localRuntimeDir,
      // Not `host`: the host link adds that key to its own lines (pino would write it twice).
      log: opts.log?.child({ provider: LOCAL_HOST }),
      daemonArgs: this.daemonArgs,
      stubPath: opts.stubPath,
    });
    this.sshHosts = { ...config.hosts };
    this.lsp = new HostLsp(config.lsp, (host) => this.providerFor(host));
  }

  /** Loads the SSH stack and creates its provider when the config has SSH hosts. */
  async start(): Promise<this> {
    if (Object.keys(this.sshHosts).length > 0) await this.sshProvider();
    // Created now, so output is acknowledged (free run) even before any consumer attaches.
    creditFor(this);
    return this;
  }

  private async sshProvider(): Promise<SshPtyProvider> {
    if (this.ssh) return this.ssh;
    const { SshPtyProvider } = await import('../ssh/ssh-pty-provider.js');
    this.ssh ??= new SshPtyProvider({
      link: this.link,
      hosts: this.sshHosts,
      log: this.opts.log?.child({ provider: 'ssh' }),
      daemonArgs: this.daemonArgs,
      stubPath: this.opts.stubPath,
      onProgress: (host, p) =>
        this.progress.emit({
          host,
          step: p.step,
          message: p.message,
          ...('bytes' in p && p.bytes !== undefined ? { bytes: p.bytes, totalBytes: p.totalBytes } : {}),
        }),
    });
    this.providerAdded.emit(this.ssh);
    return this.ssh;
  }

  /**
   * Takes the SSH hosts of a reloaded config: added hosts can be used at once, removed ones are
   * gone (their terminals keep running on the host), changed ones reconnect with their new
   * settings; unchanged hosts keep their links.
   */
  async applyHosts(hosts: Record<string, SshHostConfig>): Promise<HostsChange> {
    let change: HostsChange;
    if (this.ssh) change = this.ssh.setHosts(hosts);
    else {
      // The first SSH hosts: the provider starts with them.
      this.sshHosts = { ...hosts };
      if (Object.keys(hosts).length > 0) await this.sshProvider();
      change = { added: Object.keys(hosts), removed: [], changed: [] };
    }
    this.sshHosts = { ...hosts };
    if (change.added.length + change.removed.length + change.changed.length > 0)
      this.hostsChanged.emit(change);
    return change;
  }

  /**
   * Connects to every host that already runs this build's stub (adoption never deploys, nor
   * starts a local daemon where none runs), so the terminals they hold are published; an SSH host
   * that holds none is let go again. Resolves with the hosts kept connected; never rejects.
   */
  async adoptAll(): Promise<string[]> {
    const tries = this.hosts().map(async (h) => ((await this.adoptHost(h)) ? [h] : []));
    return (await Promise.all(tries)).flat();
  }

  async adoptHost(h: string): Promise<boolean> {
    if (h === LOCAL_HOST) return this.local.adopt();
    const ssh = this.ssh;
    if (!ssh || !(await ssh.adopt(h))) return false;
    // A host with nothing to publish keeps no connection open (an idle relay stays small).
    return !(await ssh.releaseIfEmpty(h).catch(() => false));
  }

  /** Called after a reload changed the hosts. */
  onHostsChanged(listener: (c: HostsChange) => void): Unsubscribe {
    return this.hostsChanged.on(listener);
  }

  private isSsh(host: string): boolean {
    return this.ssh !== undefined && Object.hasOwn(this.sshHosts, host);
  }

  /** UNKNOWN_HOST naming the config file and the hosts it has. */
  private unknownHost(host: string, kind = ''): PtyRelayError {
    const names = this.hosts();
    const file = this.opts.configFile ? ` in ${this.opts.configFile}` : '';
    return new PtyRelayError(
      'UNKNOWN_HOST',
      `no ${kind}host named ${host} is configured${file} (hosts: ${names.join(', ')})`,
      { host, hosts: names, ...(this.opts.configFile ? { configFile: this.opts.configFile } : {}) },
    );
  }

  hosts(): string[] {
    return [LOCAL_HOST, ...Object.keys(this.sshHosts)];
  }

  providerFor(host: string): IPtyProvider {
    if (host === LOCAL_HOST) return this.local;
    if (this.isSsh(host)) return this.ssh!;
    throw this.unknownHost(host);
  }

  providers(): IPtyProvider[] {
    return this.ssh ? [this.local, this.ssh] : [this.local];
  }

  onProviderAdded(listener: (p: IPtyProvider) => void): Unsubscribe {
    return this.providerAdded.on(listener);
  }

  listHost(host: string): Promise<PtyProcessInfo[]> {
    if (host === LOCAL_HOST) return this.local.listHost(host);
    if (this.isSsh(host)) return this.ssh!.listHost(host);
    return Promise.reject(this.unknownHost(host));
  }

  linkState(host: string): LinkState {
    if (host === LOCAL_HOST) return this.local.linkState(host);
    if (this.isSsh(host)) return this.ssh!.linkState(host);
    return { state: 'idle' };
  }

  onHostProgress(listener: (p: HostProgress) => void): Unsubscribe {
    return this.progress.on(listener);
  }

  hostKeys(host: string): HostKeyAdmin {
    if (!this.isSsh(host)) throw this.unknownHost(host, 'SSH ');
    const ssh = this.ssh!;
    return {
      inspect: () => ssh.inspectHostKey(host),
      trust: (fingerprint, replace) => ssh.trustHostKey(host, fingerprint, replace),
    };
  }

  async dispose(): Promise<void> {
    await Promise.allSettled(this.providers().map((p) => p.dispose()));
  }
}

/** A started {@link ConfigHostRouter} for `config`. */
export function createHostRouter(
  config: RelayConfig,
  opts: HostRouterOptions = {},
): Promise<ConfigHostRouter> {
  return new ConfigHostRouter(config, opts).start();
}

/**
 * A router over fixed providers by host name, first host first (the bench, tests, embedders that
 * build their own providers): a host's terminals are its provider's, filtered by host.
 */
export function routerOver(byHost: Record<string, IPtyProvider>): HostRouter {
  const names = Object.keys(byHost);
  const providerFor = (host: string): IPtyProvider => {
    const p = Object.hasOwn(byHost, host) ? byHost[host] : undefined;
    if (!p)
      throw new PtyRelayError(
        'UNKNOWN_HOST',
        `no host named ${host} is configured (hosts: ${names.join(', ')})`,
        {
          host,
          hosts: names,
        },
      );
    return p;
  };
  return {
    hosts: () => [...names],
    providerFor,
    providers: () => [...new Set(Object.values(byHost))],
    listHost: async (host) => (await providerFor(host).listProcesses()).filter((t) => t.host === host),
    linkState: (host) =>
      (providerFor(host) as IPtyProvider & { linkState?(h: string): LinkState }).linkState?.(host) ?? {
        state: 'idle',
      },
  };
}
