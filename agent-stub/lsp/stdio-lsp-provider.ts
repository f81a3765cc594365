import { pathToFileURL } from 'node:url';
import type { CancellationToken } from 'vscode-jsonrpc/node';
import {
  DefinitionRequest,
  HoverRequest,
  ImplementationRequest,
  ReferencesRequest,
  type TextDocumentPositionParams,
} from 'vscode-languageserver-protocol';
import {
  assertNever,
  type LspProvider,
  type LspProviderQuery,
  type LspQueryResult,
} from '../../provider/lsp-seam.js';
import type { LspStdioConfig } from '../../provider/wire/lsp-messages.js';
import { LanguageServer } from './language-server.js';
import { raceAbort } from './lsp-registry.js';
import { normalizeHover, normalizeLocations } from './lsp-results.js';
import { TransientDocuments } from './transient-documents.js';
import { resolveWorkspace } from './workspace-paths.js';

type Log = (msg: string, extra?: Record<string, unknown>) => void;

/** One running server of the pool, with its documents and the queries using it. */
interface PoolEntry {
  server: LanguageServer;
  documents: TransientDocuments;
  active: number;
  idle?: NodeJS.Timeout;
}

/**
 * The seam's provider for a language server on stdio (docs/lsp.md): one server per workspace
 * root, started on the first query there, stopped after `idleMs` without one, started afresh
 * after a crash. Around each query the document is opened and closed again; the caller's
 * AbortSignal (its cancel or the registry's deadline) becomes `$/cancelRequest`.
 */
export class StdioLspProvider implements LspProvider {
  readonly id: string;
  readonly extensionToLanguage: Readonly<Record<string, string>>;
  private readonly pool = new Map<string, Promise<PoolEntry>>();
  private disposed = false;

  constructor(
    private readonly cfg: LspStdioConfig,
    private readonly log: Log = () => {},
  ) {
    this.id = cfg.id;
    this.extensionToLanguage = cfg.extensionToLanguage;
  }

  async query(
    request: LspProviderQuery,
    signal: AbortSignal = new AbortController().signal,
  ): Promise<LspQueryResult> {
    const { root, file } = await resolveWorkspace(request.workspaceRoot, request.filePath);
    const entry = await raceAbort(this.entryFor(root), signal);
    entry.active++;
    clearTimeout(entry.idle);
    try {
      const uri = pathToFileURL(file).href;
      // Not raced: an open given up half way would never be closed. It is a read and a notification.
      const release = await entry.documents.use(uri, file, request.languageId);
      try {
        if (signal.aborted) throw signal.reason;
        const at: TextDocumentPositionParams = { textDocument: { uri }, position: request.position };
        return await raceAbort(
          this.send(entry.server, request, at, signal, pathToFileURL(root).href),
          signal,
        );
      } finally {
        release();
      }
    } finally {
      entry.active--;
      this.armIdle(entry);
    }
  }

  private async send(
    server: LanguageServer,
    request: LspProviderQuery,
    at: TextDocumentPositionParams,
    signal: AbortSignal,
    resolvedWorkspaceUri: string,
  ): Promise<LspQueryResult> {
    const c = server.connection;
    const locations = async (method: string, send: (t: CancellationToken) => Promise<unknown>) => ({
      kind: 'locations' as const,
      locations: normalizeLocations(method, await server.request(send, signal)),
      resolvedWorkspaceUri,
    });
    switch (request.operation) {
      case 'goToDefinition':
        return locations(DefinitionRequest.method, (t) => c.sendRequest(DefinitionRequest.type, at, t));
      case 'goToImplementation':
        return locations(ImplementationRequest.method, (t) =>
          c.sendRequest(ImplementationRequest.type, at, t),
        );
      case 'findReferences': {
        // The seam always includes the declaration: callers have no switch for it.
        const params = { ...at, context: { includeDeclaration: true } };
        return locations(ReferencesRequest.method, (t) => c.sendRequest(ReferencesRequest.type, params, t));
      }
      case 'hover': {
        const raw = await server.request((t) => c.sendRequest(HoverRequest.type, at, t), signal);
        return { kind: 'hover', content: normalizeHover(raw) };
      }
      default:
        return assertNever(request.operation);
    }
  }

  /** The live server for `root`, started when there is none (a crashed or stopped one is replaced). */
  private entryFor(root: string): Promise<PoolEntry> {
    const known = this.pool.get(root);
    if (known) return known;
    const starting = LanguageServer.start(this.cfg, root, {
      onGone: (server) => this.forget(root, server),
      log: this.log,
    }).then((server) => {
      this.log('language server started', { provider: this.id, root, pid: server.pid });
      const entry: PoolEntry = { server, documents: new TransientDocuments(server.connection), active: 0 };
      if (!server.alive) this.forget(root, server);
      // A caller that gave up while it started leaves it to the idle timer.
      this.armIdle(entry);
      return entry;
    });
    this.pool.set(root, starting);
    starting.catch(() => {
      if (this.pool.get(root) === starting) this.pool.delete(root);
    });
    return starting;
  }

  private forget(root: string, server: LanguageServer): void {
    const current = this.pool.get(root);
    if (!current) return;
    current.then(
      (e) => {
        if (e.server === server && this.pool.get(root) === current) {
          clearTimeout(e.idle);
          this.pool.delete(root);
        }
      },
      () => {},
    );
  }

  private armIdle(entry: PoolEntry): void {
    if (entry.active > 0 || this.disposed || !entry.server.alive) return;
    clearTimeout(entry.idle);
    entry.idle = setTimeout(() => {
      if (entry.active > 0) return;
      this.log('language server idle: stopping it', { provider: this.id, root: entry.server.rootPath });
      void entry.server.stop();
    }, this.cfg.idleMs);
    entry.idle.unref();
  }

  /** Pids of the running servers (tests, `daemonInfo`). */
  async serverPids(): Promise<number[]> {
    const entries = await Promise.allSettled(this.pool.values());
    return entries.flatMap((e) =>
      e.status === 'fulfilled' && e.value.server.pid ? [e.value.server.pid] : [],
    );
  }

  /** Stops every server. */
  async dispose(): Promise<void> {
    this.disposed = true;
    const entries = await Promise.allSettled([...this.pool.values()]);
    this.pool.clear();
    await Promise.all(
      entries.map(async (e) => {
        if (e.status !== 'fulfilled') return;
        clearTimeout(e.value.idle);
        await e.value.server.stop();
      }),
    );
  }
}
