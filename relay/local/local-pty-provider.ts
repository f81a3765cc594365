import type { PtyProcessInfo } from '../../provider/contract.js';
import { connectOrStartDaemon } from '../../provider/daemon-launcher.js';
import { PtyRelayError } from '../../provider/errors.js';
import { defaultRuntimeDir } from '../../provider/stub-paths.js';
import { stubBuildId, stubBundlePath } from '../stub-bundle.js';
import { StubBackedProvider } from '../stub-link/stub-backed-provider.js';
import { StubClient } from '../stub-link/stub-client.js';

export interface LocalPtyProviderOptions {
  /** Directory of the daemon socket; default `$XDG_RUNTIME_DIR/ptyrelay` or `~/.cache/ptyrelay/run`. */
  runtimeDir?: string;
  /** Extra daemon flags used when this provider has to start it (e.g. `--idle-exit-ms 5000`). */
  daemonArgs?: string[];
  /** Path of the stub bundle; default the package's `dist/stub/stub.cjs`. */
  stubPath?: string;
}

/**
 * The built-in `local` host: the same stub daemon as remote hosts, started as a local detached
 * process and reached over its Unix socket. Sessions outlive this provider and its process.
 */
export class LocalPtyProvider extends StubBackedProvider {
  protected readonly defaultHost = 'local';
  readonly runtimeDir: string;
  private client: StubClient | undefined;
  private connecting: Promise<StubClient> | undefined;
  private readonly stubPath: string;
  private readonly linkId = crypto.randomUUID();

  constructor(private readonly opts: LocalPtyProviderOptions = {}) {
    super();
    this.runtimeDir = opts.runtimeDir ?? defaultRuntimeDir();
    this.stubPath = opts.stubPath ?? stubBundlePath();
  }

  protected link(host: string): Promise<StubClient> {
    if (host !== 'local')
      return Promise.reject(new PtyRelayError('UNKNOWN_HOST', `LocalPtyProvider has no host ${host}`));
    if (this.disposed) return Promise.reject(new PtyRelayError('DISPOSED', 'provider was disposed'));
    if (this.client?.isOpen) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<StubClient> {
    let socket: Awaited<ReturnType<typeof connectOrStartDaemon>>;
    try {
      socket = await connectOrStartDaemon(this.stubPath, this.runtimeDir, this.opts.daemonArgs ?? []);
    } catch (err) {
      throw new PtyRelayError('DAEMON_UNAVAILABLE', (err as Error).message);
    }
    const client = new StubClient(socket, {
      role: 'local-provider',
      buildId: stubBuildId(this.stubPath),
      linkId: this.linkId,
    });
    await client.ready;
    this.wireLink('local', client);
    this.client = client;
    return client;
  }

  override async listProcesses(): Promise<PtyProcessInfo[]> {
    return this.listHost('local');
  }

  /** Info about the running daemon (pid, build, counts). */
  async daemonInfo() {
    return (await this.link('local')).call('daemonInfo', {});
  }

  /** Stops the daemon and every session in it (tests, administration). */
  async shutdownDaemon(): Promise<void> {
    const c = await this.link('local');
    await c.call('daemonShutdown', {});
    await new Promise<void>((resolve) => {
      if (!c.isOpen) resolve();
      else c.closed.on(() => resolve());
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.client?.close();
    this.client = undefined;
    this.dataEvents.clear();
    this.exitEvents.clear();
    this.factEvents.clear();
    this.backgroundEvents.clear();
  }
}
