import type { HostProgress } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, LinkState } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import { readinessDaemonArgs } from '../agents/agent-config.js';
import { historyDaemonArgs } from '../core/history-config.js';
import type { Logger } from '../core/log.js';
import type { HostRouter } from '../core/rpc-types.js';
import { LocalPtyProvider } from '../local/local-pty-provider.js';
import type { SshPtyProvider } from '../ssh/ssh-pty-provider.js';
import { creditFor } from '../terminals/terminal-credit.js';
import { LOCAL_HOST, type RelayConfig } from './config.js';

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

/**
 * Routes host names to providers: `local` to a LocalPtyProvider, every configured SSH host to
 * one shared SshPtyProvider. Daemons this relay starts keep `limits.ringBytes` of output per
 * session. Nothing connects until a host is first used, and the SSH stack (ssh2) is loaded only
 * when an SSH host is configured.
 */
export async function createHostRouter(
  config: RelayConfig,
  opts: HostRouterOptions = {},
): Promise<HostRouter & { dispose(): Promise<void> }> {
  const f = config.flowControl;
  const daemonArgs = [
    ...['--ring-bytes', String(config.limits.ringBytes)],
    ...['--background-ring-bytes', String(config.limits.backgroundRingBytes)],
    ...['--credit-window', String(f.creditWindow)],
    ...['--credit-window-max', String(f.creditWindowMax)],
    ...['--keep-tail', String(f.keepTailBytes)],
    ...['--pending-cap', String(f.stubPendingCap)],
    ...(config.agents ? readinessDaemonArgs(config.agents) : []),
    ...historyDaemonArgs(config.history),
    ...(opts.daemonArgs ?? []),
  ];
  // The service acknowledges output for its consumers (relay/service/terminal-credit.ts), so a
  // program is paused only when every consumer that watches it is behind.
  const link = { manualAck: true, maxInputAgeMs: config.input.maxQueueAgeMs };
  const local = new LocalPtyProvider({
    link,
    runtimeDir: opts.localRuntimeDir,
    // Not `host`: the host link adds that key to its own lines (pino would write it twice).
    log: opts.log?.child({ provider: LOCAL_HOST }),
    daemonArgs,
    stubPath: opts.stubPath,
  });
  const sshNames = Object.keys(config.hosts);
  const progress = new Emitter<HostProgress>();
  const ssh: SshPtyProvider | undefined =
    sshNames.length > 0
      ? new (await import('../ssh/ssh-pty-provider.js')).SshPtyProvider({
          link,
          hosts: config.hosts,
          log: opts.log?.child({ provider: 'ssh' }),
          daemonArgs,
          stubPath: opts.stubPath,
          onProgress: (host, p) =>
            progress.emit({
              host,
              step: p.step,
              message: p.message,
              ...('bytes' in p && p.bytes !== undefined ? { bytes: p.bytes, totalBytes: p.totalBytes } : {}),
            }),
        })
      : undefined;
  const all: IPtyProvider[] = ssh ? [local, ssh] : [local];
  /** UNKNOWN_HOST naming the config file and the hosts it has. */
  const unknownHost = (host: string, kind = ''): PtyRelayError => {
    const names = [LOCAL_HOST, ...sshNames];
    const file = opts.configFile ? ` in ${opts.configFile}` : '';
    return new PtyRelayError(
      'UNKNOWN_HOST',
      `no ${kind}host named ${host} is configured${file} (hosts: ${names.join(', ')})`,
      { host, hosts: names, ...(opts.configFile ? { configFile: opts.configFile } : {}) },
    );
  };
  const router: HostRouter & { dispose(): Promise<void> } = {
    hosts: () => [LOCAL_HOST, ...sshNames],
    providerFor(host: string): IPtyProvider {
      if (host === LOCAL_HOST) return local;
      if (ssh && Object.hasOwn(config.hosts, host)) return ssh;
      throw unknownHost(host);
    },
    providers: () => [...all],
    listHost(host: string) {
      if (host === LOCAL_HOST) return local.listHost(host);
      if (ssh && Object.hasOwn(config.hosts, host)) return ssh.listHost(host);
      return Promise.reject(unknownHost(host));
    },
    linkState(host: string): LinkState {
      if (host === LOCAL_HOST) return local.linkState(host);
      if (ssh && Object.hasOwn(config.hosts, host)) return ssh.linkState(host);
      return { state: 'idle' };
    },
    onHostProgress: (listener) => progress.on(listener),
    hostKeys(host: string) {
      if (!ssh || !Object.hasOwn(config.hosts, host)) throw unknownHost(host, 'SSH ');
      return {
        inspect: () => ssh.inspectHostKey(host),
        trust: (fingerprint, replace) => ssh.trustHostKey(host, fingerprint, replace),
      };
    },
    async dispose() {
      await Promise.allSettled(all.map((p) => p.dispose()));
    },
  };
  // Created now, so output is acknowledged (free run) even before any consumer attaches.
  creditFor(router);
  return router;
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
