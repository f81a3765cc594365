import { PtyRelayError } from '../../provider/errors.js';
import type { LspProvider, LspQueryResult } from '../../provider/lsp-seam.js';
import type { LspHostConfig, LspProviderConfig, LspQueryParams } from '../../provider/wire/lsp-messages.js';
import { LspRegistry } from './lsp-registry.js';
import { MarkdownNotesProvider } from './markdown-notes-provider.js';
import { nearestWorkspaceRoot } from './workspace-paths.js';

/** Distinct configs whose providers are kept (more relays or edits in a row); the least recently used goes. */
const KEPT_CONFIGS = 4;

type Log = (msg: string, extra?: Record<string, unknown>) => void;

/** A provider the service built, with what ends it (a stdio provider's servers). */
interface Built {
  provider: LspProvider;
  dispose(): Promise<void>;
}

/** The registry of one config and the providers in it. */
interface ConfigSet {
  registry: Promise<LspRegistry>;
  built: Built[];
}

/**
 * The daemon's side of code navigation (`lspQuery`, `lspCancel`, `lspRoot`). Each query brings
 * its host's config; the providers of a config are built and registered once and kept while that
 * config is in use (a few configs at once, for relays that differ). Queries in flight are known
 * by the caller's id, so a cancel reaches them; every one ends by its deadline.
 */
export class LspService {
  private readonly sets = new Map<string, ConfigSet>();
  private readonly inflight = new Map<string, AbortController>();

  constructor(private readonly log: Log = () => {}) {}

  async query(p: LspQueryParams): Promise<LspQueryResult> {
    if (this.inflight.has(p.queryId))
      throw new PtyRelayError('INVALID_ARGUMENT', `query ${p.queryId} is already running`, {
        queryId: p.queryId,
      });
    const ctl = new AbortController();
    this.inflight.set(p.queryId, ctl);
    try {
      const registry = await this.registryFor(p.config);
      return await registry.query(p.query, { signal: ctl.signal, timeoutMs: p.config.queryTimeoutMs });
    } finally {
      this.inflight.delete(p.queryId);
    }
  }

  /** Cancels the query the caller named `queryId`; whether one was running. */
  cancel(queryId: string): { cancelled: boolean } {
    const ctl = this.inflight.get(queryId);
    ctl?.abort();
    return { cancelled: ctl !== undefined };
  }

  /** The nearest ancestor of `filePath` holding `.git` (a consumer's default root), or null. */
  root(filePath: string): { root: string | null } {
    return { root: nearestWorkspaceRoot(filePath) };
  }

  private registryFor(config: LspHostConfig): Promise<LspRegistry> {
    const key = JSON.stringify(config);
    let set = this.sets.get(key);
    if (set) {
      // Most recently used last.
      this.sets.delete(key);
      this.sets.set(key, set);
      return set.registry;
    }
    const built: Built[] = [];
    set = { built, registry: this.build(config, built) };
    const current = set;
    this.sets.set(key, current);
    current.registry.catch(() => {
      if (this.sets.get(key) === current) this.sets.delete(key);
    });
    this.evict();
    return current.registry;
  }

  /** Every provider registered, or none: a conflict disposes what was built (LSP_PROVIDER_CONFLICT). */
  private async build(config: LspHostConfig, built: Built[]): Promise<LspRegistry> {
    const registry = new LspRegistry();
    try {
      for (const c of config.providers) {
        const b = await this.provider(c);
        built.push(b);
        registry.register(b.provider);
      }
      return registry;
    } catch (err) {
      await Promise.all(built.map((b) => b.dispose()));
      throw err;
    }
  }

  private async provider(c: LspProviderConfig): Promise<Built> {
    if (c.type === 'markdown-notes')
      return { provider: new MarkdownNotesProvider(c.id), dispose: async () => {} };
    // Loaded on first use: a daemon without language servers never loads vscode-jsonrpc.
    const { StdioLspProvider } = await import('./stdio-lsp-provider.js');
    const provider = new StdioLspProvider(c, this.log);
    return { provider, dispose: () => provider.dispose() };
  }

  private evict(): void {
    while (this.sets.size > KEPT_CONFIGS) {
      const oldest = this.sets.keys().next().value;
      if (oldest === undefined) return;
      const set = this.sets.get(oldest)!;
      this.sets.delete(oldest);
      void disposeSet(set);
    }
  }

  /** Cancels every query and stops every server. */
  async dispose(): Promise<void> {
    for (const ctl of this.inflight.values()) ctl.abort();
    const sets = [...this.sets.values()];
    this.sets.clear();
    await Promise.all(sets.map(disposeSet));
  }
}

async function disposeSet(set: ConfigSet): Promise<void> {
  await set.registry.catch(() => {});
  await Promise.all(set.built.map((b) => b.dispose()));
}
