import { type ChildProcess, spawn } from 'node:child_process';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  CancellationTokenSource,
  createMessageConnection,
  type MessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';
import {
  type ClientCapabilities,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  ShutdownRequest,
} from 'vscode-languageserver-protocol';
import * as z from 'zod/mini';
import { PtyRelayError } from '../../provider/errors.js';
import type { LspStdioConfig } from '../../provider/wire/lsp-messages.js';
import { StderrTail } from './stderr-tail.js';

/** A server that has not answered `initialize` by then is given up (large projects load later, per query). */
export const INITIALIZE_TIMEOUT_MS = 60_000;
/** How long `shutdown` + `exit` may take before the server's process group is killed. */
const STOP_GRACE_MS = 2_000;

/** What the seam's operations need from a server; nothing else is announced. */
const CAPABILITIES: ClientCapabilities = {
  general: { positionEncodings: ['utf-16'] },
  textDocument: {
    synchronization: {
      dynamicRegistration: false,
      didSave: false,
      willSave: false,
      willSaveWaitUntil: false,
    },
    definition: { dynamicRegistration: false, linkSupport: true },
    implementation: { dynamicRegistration: false, linkSupport: true },
    references: { dynamicRegistration: false },
    hover: { dynamicRegistration: false, contentFormat: ['markdown', 'plaintext'] },
  },
  workspace: { workspaceFolders: true, configuration: true },
};

export interface LanguageServerEvents {
  /** The process is gone (stopped, crashed); the pool forgets this server. */
  onGone(server: LanguageServer): void;
  log(msg: string, extra?: Record<string, unknown>): void;
}

/**
 * One language server process for one workspace root: spawned in its own process group with
 * stdio pipes, spoken to through vscode-jsonrpc's message connection, initialized once. Its
 * requests (LanguageServerSession) race its exit: a crash fails them with LSP_SERVER_CRASHED and
 * the server's stderr line, and the pool starts a new server for the next query.
 */
export class LanguageServer {
  readonly connection: MessageConnection;
  private readonly child: ChildProcess;
  private readonly stderr = new StderrTail();
  private stopping = false;
  private exitedWith: PtyRelayError | undefined;
  private initialized = false;
  /** Rejects when the process exits; every request races it. */
  readonly gone: Promise<never>;
  private markGone!: (e: PtyRelayError) => void;

  private constructor(
    readonly cfg: LspStdioConfig,
    readonly rootPath: string,
    private readonly events: LanguageServerEvents,
  ) {
    this.gone = new Promise<never>((_, reject) => {
      this.markGone = reject;
    });
    this.gone.catch(() => {});
    this.child = spawn(cfg.command, cfg.args, {
      cwd: rootPath,
      env: { ...process.env, ...cfg.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own group: a server's helpers (tsserver) end with it.
      detached: true,
    });
    this.child.stderr?.on('data', (c: Buffer) => this.stderr.push(c));
    this.child.on('error', (err: NodeJS.ErrnoException) => this.onSpawnError(err));
    this.child.on('exit', (code, signal) => this.onExit(code, signal));
    this.connection = createMessageConnection(
      new StreamMessageReader(this.child.stdout!),
      new StreamMessageWriter(this.child.stdin!),
      { error: () => {}, warn: () => {}, info: () => {}, log: () => {} },
    );
    // Requests from the server: configuration gets one null per item, anything else null.
    this.connection.onRequest((method: string, params: unknown) =>
      method === 'workspace/configuration' ? configurationAnswer(params) : null,
    );
    this.connection.onNotification(() => {});
    this.connection.onError(() => {});
    this.child.stdin?.on('error', () => {});
    this.connection.listen();
  }

  /** Starts a server for `rootPath` and initializes it; LSP_SERVER_MISSING when it cannot be run or dies first. */
  static async start(
    cfg: LspStdioConfig,
    rootPath: string,
    events: LanguageServerEvents,
  ): Promise<LanguageServer> {
    const server = new LanguageServer(cfg, rootPath, events);
    await server.initialize();
    return server;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitedWith === undefined && !this.stopping;
  }

  private async initialize(): Promise<void> {
    const rootUri = pathToFileURL(this.rootPath).href;
    const init = this.connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      clientInfo: { name: 'ptyrelay' },
      rootUri,
      rootPath: this.rootPath,
      workspaceFolders: [{ uri: rootUri, name: basename(this.rootPath) || rootUri }],
      capabilities: CAPABILITIES,
      initializationOptions: this.cfg.initializationOptions ?? null,
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new PtyRelayError(
              'TIMEOUT',
              `language server ${this.cfg.id} did not answer initialize within ${INITIALIZE_TIMEOUT_MS} ms`,
            ),
          ),
        INITIALIZE_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([init, this.gone, late]);
      this.initialized = true;
      await this.connection.sendNotification(InitializedNotification.type, {});
    } catch (err) {
      // Why it failed, taken before stopping it (its exit then only says it was stopped).
      const cause =
        this.exitedWith ??
        (err instanceof PtyRelayError
          ? err
          : this.failure('LSP_SERVER_MISSING', `failed to initialize: ${err}`));
      await this.stop();
      throw cause;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A request to the server that an AbortSignal cancels (`$/cancelRequest`) and the server's exit fails. */
  async request<R>(
    send: (token: CancellationTokenSource['token']) => Promise<R>,
    signal: AbortSignal,
  ): Promise<R> {
    if (this.exitedWith) throw this.exitedWith;
    const source = new CancellationTokenSource();
    const onAbort = () => source.cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) source.cancel();
    try {
      return await Promise.race([send(source.token), this.gone]);
    } catch (err) {
      if (err instanceof ResponseError)
        throw new PtyRelayError('LSP_REQUEST_FAILED', `language server ${this.cfg.id}: ${err.message}`, {
          provider: this.cfg.id,
          lspCode: err.code,
        });
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
      source.dispose();
    }
  }

  /** `shutdown`, `exit`, then the process group killed if it is still there. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.exitedWith === undefined && this.initialized) {
      await Promise.race([
        this.connection
          .sendRequest(ShutdownRequest.type)
          .then(() => this.connection.sendNotification(ExitNotification.type)),
        this.gone,
        sleep(STOP_GRACE_MS),
      ]).catch(() => {});
    }
    if (this.exitedWith === undefined) await Promise.race([this.gone.catch(() => {}), sleep(STOP_GRACE_MS)]);
    this.killGroup();
    this.connection.dispose();
  }

  private failure(code: 'LSP_SERVER_MISSING' | 'LSP_SERVER_CRASHED', what: string): PtyRelayError {
    const line = this.stderr.line();
    return new PtyRelayError(code, `language server ${this.cfg.id} ${what}${line ? `: ${line}` : ''}`, {
      provider: this.cfg.id,
      command: this.cfg.command,
      ...(line ? { stderr: line, stderrTail: this.stderr.text() } : {}),
    });
  }

  private onSpawnError(err: NodeJS.ErrnoException): void {
    if (this.exitedWith) return;
    this.exitedWith = new PtyRelayError(
      'LSP_SERVER_MISSING',
      `language server ${this.cfg.id} could not be started: ${this.cfg.command}: ${err.message}`,
      { provider: this.cfg.id, command: this.cfg.command, errno: err.code },
    );
    this.finish();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitedWith) return;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    this.exitedWith = this.stopping
      ? new PtyRelayError('LSP_SERVER_CRASHED', `language server ${this.cfg.id} was stopped`, {
          provider: this.cfg.id,
        })
      : this.initialized
        ? this.failure('LSP_SERVER_CRASHED', `exited (${how})`)
        : this.failure('LSP_SERVER_MISSING', `exited before it answered initialize (${how})`);
    if (!this.stopping)
      this.events.log('language server exited', { provider: this.cfg.id, root: this.rootPath, how });
    this.finish();
  }

  private finish(): void {
    this.markGone(this.exitedWith!);
    this.killGroup();
    this.events.onGone(this);
  }

  /** Whatever the server left in its group (a tsserver it forked). */
  private killGroup(): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }
}

const configurationParams = z.looseObject({ items: z.array(z.unknown()) });

/** `workspace/configuration`: no settings of ours, one null per item asked. */
function configurationAnswer(params: unknown): null[] {
  const r = configurationParams.safeParse(params);
  return r.success ? r.data.items.map(() => null) : [];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
