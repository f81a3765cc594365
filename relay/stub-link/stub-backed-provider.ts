import type {
  ForegroundProcess,
  IPtyProvider,
  PtyAttachOptions,
  PtyAttachResult,
  PtyBackgroundStreamEvent,
  PtyDataEvent,
  PtyExitEvent,
  PtyFactEvent,
  PtyProcessInfo,
  PtySpawnOptions,
  PtySpawnResult,
  ScreenSnapshot,
  ShutdownOptions,
  Unsubscribe,
} from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { StubAttachResult, StubSpawnParams } from '../../provider/wire/messages.js';
import type { StubClient } from './stub-client.js';

/** Splits `<host>/<id>`; a bare id belongs to the default host. */
export function splitTerminalId(id: string, defaultHost: string): { host: string; localId: string } {
  const slash = id.lastIndexOf('/');
  if (slash < 0) return { host: defaultHost, localId: id };
  return { host: id.slice(0, slash), localId: id.slice(slash + 1) };
}

/**
 * IPtyProvider over stub links, one per host. Subclasses say how to reach a host's daemon
 * (`link`); this class maps ids to `<host>/<id>`, guards incarnations and fans out events.
 */
export abstract class StubBackedProvider implements IPtyProvider {
  protected readonly dataEvents = new Emitter<PtyDataEvent>();
  protected readonly exitEvents = new Emitter<PtyExitEvent>();
  protected readonly factEvents = new Emitter<PtyFactEvent>();
  protected readonly backgroundEvents = new Emitter<PtyBackgroundStreamEvent>();
  /** Current incarnation per global id: events of any other incarnation are dropped. */
  protected readonly incarnations = new Map<string, string>();
  protected disposed = false;

  protected abstract readonly defaultHost: string;
  /** The live stub link of `host`, connecting (and deploying) when needed. */
  protected abstract link(host: string): Promise<StubClient>;

  /** Subscribes this provider to a new link's events; call once per link. */
  protected wireLink(host: string, client: StubClient): void {
    client.attached.on((r) => this.incarnations.set(`${host}/${r.id}`, r.incarnationId));
    client.data.on((e) => {
      const id = `${host}/${e.id}`;
      if (this.incarnations.get(id) !== e.incarnationId) return;
      this.dataEvents.emit({ id, incarnationId: e.incarnationId, seq: e.seq, data: e.data });
    });
    client.fact.on((e) => {
      const id = `${host}/${e.id}`;
      if (this.incarnations.get(id) !== e.incarnationId) return;
      this.factEvents.emit({ id, incarnationId: e.incarnationId, seq: e.seq, fact: e.fact });
    });
    client.exit.on((e) => {
      const id = `${host}/${e.id}`;
      if (this.incarnations.get(id) !== e.incarnationId) return;
      this.exitEvents.emit({
        id,
        incarnationId: e.incarnationId,
        exitCode: e.exitCode,
        ...(e.signal ? { signal: e.signal } : {}),
      });
    });
  }

  protected resolve(id: string): { host: string; localId: string } {
    if (this.disposed) throw new PtyRelayError('DISPOSED', 'provider was disposed');
    return splitTerminalId(id, this.defaultHost);
  }

  protected toResult(host: string, r: StubAttachResult, blob: Uint8Array | undefined): PtySpawnResult {
    const id = `${host}/${r.id}`;
    this.incarnations.set(id, r.incarnationId);
    const out: PtySpawnResult = {
      id,
      pid: r.pid,
      incarnationId: r.incarnationId,
      cols: r.cols,
      rows: r.rows,
      providerSequence: { value: r.seq, generation: r.generation },
    };
    if (blob && blob.length > 0) out.replay = blob;
    if (r.snapshot) out.snapshot = r.snapshot;
    if (r.exited) out.exited = r.exited;
    if (r.title !== undefined) out.title = r.title;
    if (r.cwd !== undefined) out.cwd = r.cwd;
    if (r.reused) out.reused = true;
    if (r.exitedBeforeSpawnReply) out.exitedBeforeSpawnReply = true;
    return out;
  }

  async spawn(opts: PtySpawnOptions): Promise<PtySpawnResult> {
    if (this.disposed) throw new PtyRelayError('DISPOSED', 'provider was disposed');
    const host = opts.host ?? this.defaultHost;
    const { signal, host: _h, ...rest } = opts;
    if (signal?.aborted) throw new PtyRelayError('ABORTED', 'spawn aborted');
    const client = await this.link(host);
    const params: StubSpawnParams = rest;
    const pending = client.request('spawn', params);
    if (signal) {
      const aborted = new Promise<never>((_, reject) => {
        signal.addEventListener('abort', () => reject(new PtyRelayError('ABORTED', 'spawn aborted')), {
          once: true,
        });
      });
      try {
        await Promise.race([pending, aborted]);
      } catch (err) {
        // A spawn that completes after the caller gave up must not leave a PTY behind.
        pending
          .then(({ result }) =>
            result.reused ? undefined : client.call('shutdown', { id: result.id, immediate: true }),
          )
          .catch(() => {});
        throw err;
      }
    }
    const { result, blob } = await pending;
    const out = this.toResult(host, result, blob);
    if (result.exited && !result.reused) out.exitedBeforeSpawnReply = true;
    return out;
  }

  async attach(id: string, opts: PtyAttachOptions = {}): Promise<PtyAttachResult> {
    const { host, localId } = this.resolve(id);
    const client = await this.link(host);
    const { result, blob } = await client.request('attach', { id: localId, ...opts });
    return this.toResult(host, result, blob);
  }

  async write(id: string, data: string | Uint8Array): Promise<void> {
    const { host, localId } = this.resolve(id);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    await (await this.link(host)).sendInput(localId, bytes);
  }

  protected async call<T>(
    id: string,
    method: Parameters<StubClient['call']>[0],
    extra: object = {},
  ): Promise<T> {
    const { host, localId } = this.resolve(id);
    return (await (await this.link(host)).call(method, { id: localId, ...extra } as never)) as T;
  }

  async resize(id: string, cols: number, rows: number): Promise<void> {
    await this.call(id, 'resize', { cols, rows });
  }

  async shutdown(id: string, opts: ShutdownOptions = {}): Promise<void> {
    await this.call(id, 'shutdown', opts);
  }

  async sendSignal(id: string, signal: string): Promise<void> {
    await this.call(id, 'signal', { signal });
  }

  async getCwd(id: string): Promise<string | undefined> {
    return (await this.call<{ cwd?: string }>(id, 'getCwd')).cwd;
  }

  async getForegroundProcess(id: string): Promise<ForegroundProcess | undefined> {
    return (await this.call<{ process?: ForegroundProcess }>(id, 'getForegroundProcess')).process;
  }

  async hasChildProcesses(id: string): Promise<boolean> {
    return (await this.call<{ value: boolean }>(id, 'hasChildProcesses')).value;
  }

  protected async listHost(host: string): Promise<PtyProcessInfo[]> {
    const { sessions } = await (await this.link(host)).call('list', {});
    return sessions.map((s) => ({ ...s, id: `${host}/${s.id}`, host }));
  }

  async listProcesses(): Promise<PtyProcessInfo[]> {
    return this.listHost(this.defaultHost);
  }

  async probePtyLiveness(id: string): Promise<boolean | undefined> {
    try {
      return (await this.call<{ alive: boolean }>(id, 'probe')).alive;
    } catch {
      return undefined;
    }
  }

  async getBufferSnapshot(id: string, opts: { scrollbackRows?: number } = {}): Promise<ScreenSnapshot> {
    return this.call<ScreenSnapshot>(id, 'snapshot', opts);
  }

  async clearBuffer(id: string): Promise<void> {
    await this.call(id, 'clear');
  }

  async pauseProducer(id: string): Promise<void> {
    await this.call(id, 'pause');
  }

  async resumeProducer(id: string): Promise<void> {
    await this.call(id, 'resume');
  }

  async setPtyBackgrounded(id: string, background: boolean): Promise<void> {
    await this.call(id, 'setBackgrounded', { background });
  }

  acknowledgeDataEvent(_id: string, _bytes: number): void {
    // Credit flow control is carried by the socket's own backpressure until the credit window lands.
  }

  onData(listener: (e: PtyDataEvent) => void): Unsubscribe {
    return this.dataEvents.on(listener);
  }

  onExit(listener: (e: PtyExitEvent) => void): Unsubscribe {
    return this.exitEvents.on(listener);
  }

  onFact(listener: (e: PtyFactEvent) => void): Unsubscribe {
    return this.factEvents.on(listener);
  }

  onBackgroundStreamEvent(listener: (e: PtyBackgroundStreamEvent) => void): Unsubscribe {
    return this.backgroundEvents.on(listener);
  }

  abstract dispose(): Promise<void>;
}
