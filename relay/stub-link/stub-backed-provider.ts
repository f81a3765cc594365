import { randomUUID } from 'node:crypto';
import type {
  AgentReadOptions,
  AgentReadResult,
  AgentSendOptions,
  AgentSendResult,
  ForegroundProcess,
  IPtyProvider,
  LinkStateEvent,
  PtyAttachOptions,
  PtyAttachResult,
  PtyBackgroundStreamEvent,
  PtyDataEvent,
  PtyExitEvent,
  PtyFactEvent,
  PtyHistoryPage,
  PtyProcessInfo,
  PtyReattachEvent,
  PtySpawnOptions,
  PtySpawnResult,
  PtyWriteOptions,
  ScreenSnapshot,
  ShutdownOptions,
  Unsubscribe,
} from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import { AckScheduler } from '../../provider/flow/ack-scheduler.js';
import {
  agentReadResultSchema,
  agentSendResultSchema,
  parseWire,
} from '../../provider/wire/agent-messages.js';
import { historyPageSchema } from '../../provider/wire/history-messages.js';
import type { StubAttachResult, StubSpawnParams } from '../../provider/wire/messages.js';
import type { Logger } from '../log.js';
import type { RaceAttempt } from '../reconnect/attempt-race.js';
import { HostLink } from '../reconnect/host-link.js';
import { InputChannel } from '../reconnect/input-channel.js';
import type { ReachabilityProbe } from '../reconnect/reachability-probe.js';
import { type DaemonInfo, listDaemons, stopDaemon } from './daemon-admin.js';
import { HostDaemons } from './host-daemons.js';
import type { LinkPolicy } from './link-policy.js';
import { reattachSessions } from './reattach-sessions.js';
import { SessionTracker } from './session-tracker.js';
import type { StubClient } from './stub-client.js';
import { globalizeError, toSpawnResult } from './terminal-ids.js';

export type { LinkPolicy } from './link-policy.js';
export { globalTerminalId, routeTerminalId, splitTerminalId } from './terminal-ids.js';

/** An agent send's answer may come this much after its own timeout (the daemon's final poll, the link). */
const AGENT_SEND_REPLY_MARGIN_MS = 30_000;

/** Reconnect attempts for an older build's daemon before it is considered gone. */
const LEGACY_RETRIES = 3;

/**
 * IPtyProvider over stub links, one per host. Subclasses say how to reach a host's daemon
 * (`link`); this class maps ids to `<host>/<id>`, guards incarnations and fans out events.
 */
export abstract class StubBackedProvider implements IPtyProvider {
  protected readonly dataEvents = new Emitter<PtyDataEvent>();
  protected readonly exitEvents = new Emitter<PtyExitEvent>();
  protected readonly factEvents = new Emitter<PtyFactEvent>();
  protected readonly backgroundEvents = new Emitter<PtyBackgroundStreamEvent>();
  protected readonly linkStateEvents = new Emitter<LinkStateEvent>();
  protected readonly reattachEvents = new Emitter<PtyReattachEvent>();
  /** Delivery state per global id: incarnation guard, seq, exit-once. */
  protected readonly tracker = new SessionTracker();
  protected readonly hostLinks = new Map<string, HostLink>();
  /** Each host's daemons (current and older builds) and which one serves each terminal. */
  protected readonly daemons = new HostDaemons({
    defaultHost: () => this.defaultHost,
    link: (key) => this.link(key),
    closeLink: (key) => {
      this.hostLinks.get(key)?.close();
      this.hostLinks.delete(key);
    },
    log: () => this.log,
  });
  private readonly inputs = new Map<string, InputChannel>();
  /** Local ids whose attach is a reattach after a reconnect (their replay is emitted as data). */
  private readonly reattaching = new Set<string>();
  private readonly acks = new AckScheduler((id, seq) => {
    const t = this.tracker.get(id);
    const client = t && this.hostLinks.get(t.host)?.connectedClient;
    if (!t || !client) return false;
    client.ack(t.localId, seq);
    return true;
  });
  protected disposed = false;

  protected abstract readonly defaultHost: string;
  protected abstract readonly log: Logger | undefined;
  protected linkPolicy: LinkPolicy = {};
  /**
   * This relay's identity toward daemons. Credit claims are held per relayId, so a relay that
   * restarts with the same id (the service persists it) picks up where it left off.
   */
  protected relayId: string = randomUUID();
  /**
   * Reconnect attempts to one host that may race (see AttemptRace); 1 = one at a time. Worth more
   * than one where an attempt can hang on a network that swallows packets (SSH).
   */
  protected readonly reconnectAttempts: number = 1;
  /** A first contact fails at its first failed attempt instead of retrying (HostLinkOptions). */
  protected readonly failFirstContact: boolean = false;
  /**
   * Opens a fresh stub link to `host` (connect, deploy, handshake). Called again on every reconnect,
   * possibly for several racing attempts at once: an attempt stops when `attempt.signal` aborts, and
   * calls `attempt.claim()` before it registers anything shared about the link.
   */
  protected abstract openLink(host: string, attempt: RaceAttempt): Promise<StubClient>;

  /** How to tell, cheaply and often, that `host` answers again after an outage (none by default). */
  protected reachabilityProbe(_host: string): ReachabilityProbe | undefined {
    return undefined;
  }

  /** The connected client of `host`, connecting or waiting for a reconnect as needed. */
  protected link(host: string): Promise<StubClient> {
    if (this.disposed) return Promise.reject(new PtyRelayError('DISPOSED', 'provider was disposed'));
    return this.hostLink(host).get();
  }

  protected hostLink(host: string): HostLink {
    let l = this.hostLinks.get(host);
    if (!l) {
      const legacy = host.includes('#');
      l = new HostLink(host, (attempt) => this.openLink(host, attempt), {
        ...this.linkPolicy,
        // An old build's daemon exits with its last session; do not chase it for long. Its link
        // rides on the host's connection, so its attempts never race.
        ...(legacy
          ? { ladder: { ...this.linkPolicy.ladder, giveUpAfter: LEGACY_RETRIES } }
          : {
              maxConcurrentAttempts: this.reconnectAttempts,
              failFirstContact: this.failFirstContact,
              probe: this.reachabilityProbe(host),
            }),
        log: this.log,
        onConnected: (c, reconnect) => this.onConnected(host, c, reconnect),
        onDisconnected: () => this.inputChannel(host).disconnect(),
      });
      l.states.on((state) => this.linkStateEvents.emit({ host, state }));
      this.hostLinks.set(host, l);
    }
    return l;
  }

  /** Identity fields a subclass puts in a new StubClient's hello. */
  protected linkIdentity(host: string): { linkId: string; inputEpoch: string; legacy: boolean } {
    return { linkId: this.relayId, inputEpoch: this.inputChannel(host).epoch, legacy: host.includes('#') };
  }

  protected inputChannel(host: string): InputChannel {
    let c = this.inputs.get(host);
    if (!c) {
      c = new InputChannel({ maxQueueAgeMs: this.linkPolicy.maxInputAgeMs });
      this.inputs.set(host, c);
    }
    return c;
  }

  private async onConnected(host: string, client: StubClient, reconnect: boolean): Promise<void> {
    this.daemons.connected(host, client);
    this.wireLink(host, client);
    this.inputChannel(host).connect(client);
    if (reconnect) await this.reattachHost(host, client);
  }

  /** Re-attaches every session this provider delivered on `host`, from the last delivered seq. */
  private reattachHost(host: string, client: StubClient): Promise<void> {
    return reattachSessions(client, this.tracker.ofHost(host), this.reattaching, (t) => {
      this.tracker.delete(t.id);
      this.reattachEvents.emit({
        id: t.id,
        incarnationId: t.incarnationId,
        generation: 'reset',
        sessionExpired: true,
      });
    });
  }

  /** Runs synchronously as a spawn/attach reply is decoded, before the data frames behind it. */
  private onAttachReply(host: string, r: StubAttachResult, blob: Uint8Array | undefined): void {
    const id = this.daemons.globalId(host, r.id);
    const reattach = this.reattaching.has(r.id);
    if (r.sessionExpired) {
      // A terminal lost with its host: nothing live to track; a reattach reports it with its record.
      this.tracker.delete(id);
      if (reattach) {
        this.reattachEvents.emit({
          id,
          incarnationId: r.incarnationId,
          generation: 'reset',
          sessionExpired: true,
          ...(r.coldRestore ? { coldRestore: r.coldRestore } : {}),
        });
      }
      return;
    }
    const from = r.replayFromSeq ?? r.seq;
    const t = this.tracker.set(id, host, r.id, r.incarnationId, reattach ? from : r.seq);
    if (!reattach) {
      // The caller gets the replay in the result: it counts as consumed.
      t.consumerSeq = r.seq;
      this.queueAck(id, r.seq);
      return;
    }
    if (r.generation === 'reset') {
      this.reattachEvents.emit({
        id,
        incarnationId: r.incarnationId,
        generation: 'reset',
        snapshot: r.snapshot,
      });
    }
    if (blob && blob.length > 0) this.deliver(id, r.incarnationId, from, blob);
    t.seq = r.seq;
    if (r.exited && this.tracker.markExit(id, r.incarnationId)) {
      this.exitEvents.emit({ id, incarnationId: r.incarnationId, ...r.exited });
    }
  }

  /** Emits the unseen part of a chunk and, without manual flow control, credits it at once. */
  private deliver(id: string, incarnationId: string, seq: number, data: Uint8Array): void {
    const d = this.tracker.accept(id, incarnationId, seq, data);
    if (!d) return;
    this.dataEvents.emit({ id, incarnationId, seq: d.seq, data: d.data });
    if (!this.linkPolicy.manualAck) this.queueAck(id, d.seq + d.data.length);
  }

  protected queueAck(id: string, seq: number): void {
    this.acks.queue(id, seq);
  }

  /** Subscribes this provider to a new link's events. */
  protected wireLink(host: string, client: StubClient): void {
    client.beforeWrite = () => this.acks.rideWith((id) => this.tracker.get(id)?.host === host);
    client.attached.on(({ result, blob }) => this.onAttachReply(host, result, blob));
    client.data.on((e) => this.deliver(this.daemons.globalId(host, e.id), e.incarnationId, e.seq, e.data));
    client.fact.on((e) => {
      const id = this.daemons.globalId(host, e.id);
      if (!this.tracker.isCurrent(id, e.incarnationId)) return;
      this.factEvents.emit({ id, incarnationId: e.incarnationId, seq: e.seq, fact: e.fact });
    });
    client.background.on((m) => {
      const id = this.daemons.globalId(host, m.id);
      const t = this.tracker.get(id);
      if (!t || t.incarnationId !== m.incarnationId) return;
      const ev = m.event;
      // A gap moves the delivered position past the dropped bytes; foregrounding restarts it at the snapshot.
      if (ev.type === 'dataGap') t.seq = Math.max(t.seq, ev.toSeq);
      else if (ev.type === 'backgroundMarker' && !ev.background) t.seq = ev.seq;
      this.backgroundEvents.emit({ id, incarnationId: m.incarnationId, ...ev } as PtyBackgroundStreamEvent);
    });
    client.exit.on((e) => {
      const id = this.daemons.globalId(host, e.id);
      if (!this.tracker.markExit(id, e.incarnationId)) return;
      this.exitEvents.emit({
        id,
        incarnationId: e.incarnationId,
        exitCode: e.exitCode,
        ...(e.signal ? { signal: e.signal } : {}),
      });
    });
  }

  /** The daemon (link key) and its id for a global id, from what this provider has seen so far. */
  protected resolve(id: string): { host: string; localId: string } {
    if (this.disposed) throw new PtyRelayError('DISPOSED', 'provider was disposed');
    return this.daemons.resolve(id);
  }

  /** {@link resolve}, looking an unknown id up among the daemons of its host (HostDaemons.locate). */
  protected locate(id: string): Promise<{ host: string; localId: string }> {
    if (this.disposed) return Promise.reject(new PtyRelayError('DISPOSED', 'provider was disposed'));
    return this.daemons.locate(id);
  }

  protected toResult(host: string, r: StubAttachResult, blob: Uint8Array | undefined): PtySpawnResult {
    const out = toSpawnResult(this.daemons.globalId(host, r.id), r, blob);
    this.daemons.served(out.id, host);
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
    const { host, localId } = await this.locate(id);
    const client = await this.link(host);
    const { result, blob } = await client
      .request('attach', { id: localId, ...opts })
      .catch((err: unknown) => Promise.reject(globalizeError(err, localId, id)));
    return this.toResult(host, result, blob);
  }

  async write(id: string, data: string | Uint8Array, opts: PtyWriteOptions = {}): Promise<void> {
    let { host, localId } = this.resolve(id);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const link = this.hostLink(host);
    // First contact must succeed before input can be queued; later outages queue it.
    if (link.state.state === 'idle' || link.state.state === 'connecting') await link.get();
    // Known ids go straight to their queue, so writes keep their order.
    if (this.daemons.unrouted(id)) ({ host, localId } = await this.locate(id));
    await this.inputChannel(host).submit(localId, bytes, opts.owner);
  }

  /**
   * Discards input queued during an outage and not sent yet, of `owner` (for terminal `id`, or
   * on every host): it detached (`detached`) or its connection went away (`gone`). Returns the
   * bytes discarded; their writes fail with INPUT_EXPIRED.
   */
  dropQueuedInput(owner: string, id: string | undefined, reason: 'detached' | 'gone'): number {
    if (id !== undefined) {
      const { host, localId } = this.resolve(id);
      return this.inputs.get(host)?.dropQueued({ owner, id: localId }, reason) ?? 0;
    }
    let bytes = 0;
    for (const c of this.inputs.values()) bytes += c.dropQueued({ owner }, reason);
    return bytes;
  }

  protected async call<T>(
    id: string,
    method: Parameters<StubClient['call']>[0],
    extra: object = {},
  ): Promise<T> {
    const { host, localId } = await this.locate(id);
    try {
      return (await (await this.link(host)).call(method, { id: localId, ...extra } as never)) as T;
    } catch (err) {
      throw globalizeError(err, localId, id);
    }
  }

  async resize(id: string, cols: number, rows: number): Promise<void> {
    await this.call(id, 'resize', { cols, rows });
  }

  async shutdown(id: string, opts: ShutdownOptions = {}): Promise<void> {
    await this.call(id, 'shutdown', opts);
    const key = this.canonical(id);
    this.tracker.delete(key);
    this.acks.forget(key);
    this.daemons.ended(key);
  }

  protected canonical(id: string): string {
    const { host, localId } = this.resolve(id);
    return this.daemons.globalId(host, localId);
  }

  async sendSignal(id: string, signal: string): Promise<void> {
    await this.call(id, 'signal', { signal });
  }

  async agentSend(id: string, data: string, opts: AgentSendOptions): Promise<AgentSendResult> {
    const { host, localId } = this.resolve(id);
    const client = await this.link(host);
    const params = {
      id: localId,
      data,
      timeoutMs: opts.timeoutMs,
      ...(opts.idleMs ? { idleMs: opts.idleMs } : {}),
    };
    const result = await client.call('agentSend', params, opts.timeoutMs + AGENT_SEND_REPLY_MARGIN_MS);
    return parseWire(agentSendResultSchema, result, 'agentSend result', 'PROTOCOL_ERROR');
  }

  async agentRead(id: string, opts: AgentReadOptions = {}): Promise<AgentReadResult> {
    const result = await this.call(id, 'agentRead', opts);
    const page = parseWire(agentReadResultSchema, result, 'agentRead result', 'PROTOCOL_ERROR');
    // A daemon of an earlier build ignores `from` and answers by offset: never pass that off as log lines.
    if (opts.from !== undefined && page.historyStartLine === undefined)
      throw new PtyRelayError(
        'INVALID_ARGUMENT',
        `${id}: its daemon (an earlier build) cannot read by line (from)`,
        {
          id,
        },
      );
    return page;
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

  /** Sessions of a host: its current daemon's and those of older builds still running. */
  protected listHost(host: string): Promise<PtyProcessInfo[]> {
    return this.daemons.list(host);
  }

  /** Records the older-build daemons a host reported. */
  protected noteLegacy(host: string, builds: string[]): void {
    this.daemons.noteLegacy(host, builds);
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

  async readHistory(id: string, opts: { fromSeq?: number; maxBytes?: number } = {}): Promise<PtyHistoryPage> {
    const { host, localId } = await this.locate(id);
    const client = await this.link(host);
    const { result, blob } = await client.request('readHistory', { id: localId, ...opts });
    const page = parseWire(historyPageSchema, result, 'readHistory result', 'PROTOCOL_ERROR');
    if ((blob?.length ?? 0) !== page.bytes)
      throw new PtyRelayError(
        'PROTOCOL_ERROR',
        `readHistory: ${blob?.length ?? 0} bytes, the page says ${page.bytes}`,
      );
    return {
      fromSeq: page.fromSeq,
      startSeq: page.startSeq,
      headSeq: page.headSeq,
      data: blob ?? new Uint8Array(0),
    };
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

  acknowledgeDataEvent(id: string, bytes: number): void {
    if (!this.linkPolicy.manualAck || !(bytes > 0)) return;
    const t = this.tracker.get(this.canonical(id));
    if (!t) return;
    t.consumerSeq = Math.min(t.consumerSeq + bytes, t.seq);
    this.queueAck(t.id, t.consumerSeq);
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

  onLinkState(listener: (e: LinkStateEvent) => void): Unsubscribe {
    return this.linkStateEvents.on(listener);
  }

  onReattach(listener: (e: PtyReattachEvent) => void): Unsubscribe {
    return this.reattachEvents.on(listener);
  }

  /** Per-user daemons of `host` (the current build's and older builds' still serving sessions). */
  async daemonList(host: string = this.defaultHost): Promise<DaemonInfo[]> {
    return listDaemons(
      host,
      (k) => this.link(k),
      () => this.daemons.legacyOf(host),
    );
  }

  /** Ends a daemon of `host` (current, or of `build`) and its sessions; the next use starts a new one. */
  async stopDaemon(host: string = this.defaultHost, build?: string): Promise<DaemonInfo> {
    const legacy = () => this.daemons.legacyOf(host);
    return stopDaemon(
      host,
      build,
      (k) => this.link(k),
      legacy,
      (key) => {
        this.hostLinks.get(key)?.close();
        this.hostLinks.delete(key);
        if (build !== undefined) this.daemons.dropLegacy(host, build);
      },
    );
  }

  /** Drops a host's link as a network failure would; it reconnects and reattaches on its own. */
  dropLink(host: string = this.defaultHost): void {
    this.hostLinks.get(host)?.drop();
  }

  /** Link state of one host. */
  linkState(host: string) {
    return this.hostLinks.get(host)?.state ?? { state: 'idle' as const };
  }

  /** Closes every link and listener; PTYs keep running in their daemons. */
  protected disposeLinks(): void {
    this.disposed = true;
    this.acks.dispose();
    // Leaving on purpose: the daemons drop this link's credit claims at once.
    for (const l of this.hostLinks.values()) l.connectedClient?.goodbye();
    for (const l of this.hostLinks.values()) l.close();
    this.hostLinks.clear();
    for (const c of this.inputs.values()) c.failAll(new PtyRelayError('DISPOSED', 'provider was disposed'));
    for (const e of [this.dataEvents, this.exitEvents, this.factEvents, this.backgroundEvents]) e.clear();
    this.linkStateEvents.clear();
    this.reattachEvents.clear();
  }

  abstract dispose(): Promise<void>;
}
