import type { IPtyProvider } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { LspQuery, LspQueryResult } from '../../provider/lsp-seam.js';
import type { LspHostConfig } from '../../provider/wire/lsp-messages.js';
import type { LspConfig } from '../core/lsp-config.js';
import type { HostCodeNavigation } from '../core/rpc-types.js';

/** What a provider backed by per-user daemons offers for code navigation (StubBackedProvider). */
interface LspCapable {
  lspQuery(
    host: string,
    query: LspQuery,
    config: LspHostConfig,
    signal?: AbortSignal,
  ): Promise<LspQueryResult>;
  lspRoot(host: string, filePath: string): Promise<string | null>;
}

function isLspCapable(p: IPtyProvider): p is IPtyProvider & LspCapable {
  return (
    'lspQuery' in p && typeof p.lspQuery === 'function' && 'lspRoot' in p && typeof p.lspRoot === 'function'
  );
}

/**
 * Code navigation over the relay's hosts (docs/lsp.md): a query goes to the daemon of its host
 * with that host's `lsp` config, which names the providers; a host the config leaves out has
 * none (LSP_NOT_ENABLED). A config reload replaces it (`update`): the next query carries the new
 * one, and the daemon builds its providers on first use.
 */
export class HostLsp implements HostCodeNavigation {
  constructor(
    private config: LspConfig,
    private readonly providerFor: (host: string) => IPtyProvider,
  ) {}

  /** The `lsp` section of a reloaded config. */
  update(config: LspConfig): void {
    this.config = config;
  }

  hosts(): string[] {
    return Object.keys(this.config);
  }

  private daemonOf(host: string): LspCapable {
    const p = this.providerFor(host);
    if (!isLspCapable(p))
      throw new PtyRelayError('LSP_NOT_ENABLED', `host ${host} has no daemon to run code navigation`, {
        host,
      });
    return p;
  }

  query(host: string, query: LspQuery, signal?: AbortSignal): Promise<LspQueryResult> {
    const config = Object.hasOwn(this.config, host) ? this.config[host] : undefined;
    if (!config) return Promise.reject(notEnabled(host, this.hosts()));
    return this.daemonOf(host).lspQuery(host, query, config, signal);
  }

  workspaceRoot(host: string, filePath: string): Promise<string | null> {
    if (!Object.hasOwn(this.config, host)) return Promise.reject(notEnabled(host, this.hosts()));
    return this.daemonOf(host).lspRoot(host, filePath);
  }
}

function notEnabled(host: string, hosts: string[]): PtyRelayError {
  const some = hosts.length > 0 ? ` (enabled on: ${hosts.join(', ')})` : ' (no host enables it)';
  return new PtyRelayError(
    'LSP_NOT_ENABLED',
    `code navigation is not enabled on ${host}: the relay config's lsp.hosts.${host} names its providers${some}`,
    { host, hosts },
  );
}
