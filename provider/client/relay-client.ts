import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import type {
  AgentCommandsOptions,
  AgentCommandsResult,
  AgentReadOptions,
  AgentReadResult,
  AgentSendOptions,
  AgentSendResult,
  ForegroundProcess,
  IPtyProvider,
  LinkState,
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
  ScreenSnapshot,
  ShutdownOptions,
  Unsubscribe,
} from '../contract.js';
import { Emitter } from '../emitter.js';
import { PtyRelayError } from '../errors.js';
import { AckScheduler } from '../flow/ack-scheduler.js';
import { inputBytes } from '../input/input-bytes.js';
import type { LspQuery, LspQueryResult } from '../lsp-seam.js';
import { agentReadResultSchema, agentSendResultSchema, parseWire } from '../wire/agent-messages.js';
import { commandsResultSchema } from '../wire/command-messages.js';
import { relayHistoryPageSchema } from '../wire/history-messages.js';
import { lspQueryResultSchema, lspRootResultSchema } from '../wire/lsp-messages.js';
import { ClientInputQueue } from './client-input-queue.js';
import { ClientResume } from './client-resume.js';
import { ClientStreams } from './client-streams.js';
import { RelayLink, type RelayReconnectOptions } from './relay-link.js';
import { relayNotificationSchemas } from './relay-params.js';
import {
  type HostInfo,
  type HostKeyInfo,
  type HostProgress,
  type HostUnavailable,
  type RelayDaemonInfo,
  type RelayListing,
  RelayMethod,
  RelayNotification,
  type RelayResults,
  type RelayTerminalInfo,
  type SpawnParams,
  type WireAttachResult,
} from './relay-protocol.js';

/** Host name under which RelayClient reports its own link to the relay. */
export const RELAY_HOST = 'relay';

/** Options of {@link RelayClient}. */
export interface RelayClientOptions {
  /** `ws://127.0.0.1:7681` */
  url: string;
  /** The relay's bearer token. */
  token: string;
  /** Claim identity (default: random per instance). Reuse it to keep owning terminals across runs. */
  clientId?: string;
  /** Input sequence space of this object (default: random). */
  instanceId?: string;
  /** WebSocket implementation (default: the `ws` package). */
  WebSocket?: typeof WebSocket;
  /** CA certificate(s) (PEM) a `wss://` relay's certificate must chain to, e.g. its self-signed one. */
  ca?: string | Buffer;
  /** Acknowledge data yourself with `acknowledgeDataEvent` (default: the relay credits as it sends). */
  manualAck?: boolean;
  reconnect?: RelayReconnectOptions;
  heartbeatMs?: number;
  /** How long a reconnect waits for sessions to re-attach before resending input (default 5 s). */
  reattachWaitMs?: number;
  /** Input queued while the relay is unreachable for longer than this is discarded (default 30 s). */
  maxQueueAgeMs?: number;
}

/**
 * IPtyProvider over a relay's WebSocket (`ptyrelay/*` API, docs/relay-client.md). Reconnects on
 * its own and resumes every session it delivered exactly: replay from the last delivered seq
 * continues onData; a reset comes as onReattach with a snapshot. Input written while the relay
 * is unreachable is queued (64 KiB per session) and applied exactly once.
 */
export class RelayClient implements IPtyProvider {
  readonly clientId: string;
  readonly instanceId: string;
  private readonly link: RelayLink;
  private readonly streams = new ClientStreams();
  private readonly input: ClientInputQueue;
  private readonly linkStates = new Emitter<LinkStateEvent>();
  private readonly hostProgress = new Emitter<HostProgress>();
  private readonly manualAck: boolean;
  /** Hello, re-attach and input resend on every new socket (client-resume.ts). */
  private readonly resume: ClientResume;
  /** Credit to the relay: much at once, little with the next input (one segment per keystroke). */
  private readonly acks = new AckScheduler((id, seq) => {
    this.link.notify(RelayNotification.ack, { id, seq });
    return true;
  });
  private disposed = false;

  constructor(opts: RelayClientOptions) {
    this.clientId = opts.clientId ?? `client-${randomUUID()}`;
    this.instanceId = opts.instanceId ?? randomUUID();
    this.manualAck = opts.manualAck === true;
    this.input = new ClientInputQueue(
      (frame) => {
        this.acks.rideWith(() => true);
        return this.link.sendBinary(frame);
      },
      { maxQueueAgeMs: opts.maxQueueAgeMs },
    );
    this.link = new RelayLink(opts, {
      handshake: () => this.resume.handshake(),
      notification: (m, p) => {
        // A notification has no reply: one that fails its schema is dropped (a newer relay's shape).
        const n = relayNotificationSchemas;
        if (m === RelayNotification.inputAck) {
          const r = n.inputAck.safeParse(p);
          if (r.success) this.input.onAck(r.data);
        } else if (m === RelayNotification.linkState) {
          const r = n.linkState.safeParse(p);
          if (r.success) this.linkStates.emit(r.data);
        } else if (m === RelayNotification.hostProgress) {
          const r = n.hostProgress.safeParse(p);
          if (r.success) this.hostProgress.emit(r.data);
        } else this.streams.pushNotification(m, p);
      },
      binary: (d) => this.streams.pushBinary(d),
      dropped: () => {
        this.input.disconnected();
        this.streams.clearBuffers();
      },
    });
    this.link.states.on((state) => {
      if (state.state === 'lost') this.input.failAll(new PtyRelayError('CONNECT_FAILED', state.reason));
      this.linkStates.emit({ host: RELAY_HOST, state });
    });
    this.resume = new ClientResume({
      link: this.link,
      streams: this.streams,
      input: this.input,
      clientId: this.clientId,
      instanceId: this.instanceId,
      manualAck: this.manualAck,
      reattachWaitMs: opts.reattachWaitMs,
    });
    // Never a silent hole: a session whose stream skipped re-attaches from its seq; an undecodable
    // binary message lost bytes of sessions unknown, so the whole link resumes (reconnect).
    this.streams.hole.on(({ id }) => this.resume.resync(id));
    this.streams.malformed.on(() => this.link.drop());
  }

  /** State of the link to the relay. */
  get linkState(): LinkState {
    return this.link.state;
  }

  /** Relay process id from the last hello (changes when the relay restarted). */
  get serverInstanceId(): string | undefined {
    return this.resume.serverInstanceId;
  }

  /** Connects now; resolves once the first handshake is done (rejects when the link is lost). */
  connect(): Promise<void> {
    this.check();
    return this.link.whenConnected();
  }

  async spawn(opts: PtySpawnOptions): Promise<PtySpawnResult> {
    this.check();
    const { signal, ...rest } = opts;
    if (signal?.aborted) throw new PtyRelayError('ABORTED', 'spawn aborted');
    // A requestId makes the spawn idempotent, so it can be resent after a reconnect.
    const auto = rest.requestId === undefined;
    const params: SpawnParams = { ...rest, requestId: rest.requestId ?? randomUUID() };
    if (this.manualAck) params.manualAck = true;
    const buf = this.streams.beginSpawn();
    const pending = this.link.call<WireAttachResult>(RelayMethod.spawn, params, true);
    let w: WireAttachResult;
    try {
      w = signal ? await raceAbort(pending, signal) : await pending;
    } catch (err) {
      this.streams.endSpawn(buf);
      if ((err as PtyRelayError).code === 'ABORTED') {
        // A spawn that completes after the caller gave up must not leave a PTY behind.
        pending
          .then((late) => (late.reused ? undefined : this.shutdown(late.id, { immediate: true })))
          .catch(() => {});
      }
      throw err;
    }
    this.streams.endSpawn(buf);
    const r = this.streams.settleExplicit(w, buf);
    // Our own resend found the PTY the lost first attempt created: that is not a reuse.
    if (auto && r.reused && rest.paneKey === undefined) delete r.reused;
    return r;
  }

  async attach(id: string, opts: PtyAttachOptions = {}): Promise<PtyAttachResult> {
    this.check();
    const gid = globalId(id);
    const buf = this.streams.beginAttach(gid);
    try {
      const params = { id: gid, ...opts, ...(this.manualAck ? { manualAck: true } : {}) };
      const w = await this.link.call<WireAttachResult>(RelayMethod.attach, params, true);
      return this.streams.settleExplicit(w, buf);
    } finally {
      this.streams.endAttach(gid, buf);
    }
  }

  /**
   * Stops receiving a session's events (the PTY keeps running). Input for it still queued during
   * an outage, here or at the relay, is discarded (those writes fail with INPUT_EXPIRED). Not
   * part of IPtyProvider.
   */
  async detach(id: string): Promise<void> {
    this.streams.forget(globalId(id));
    this.resume.forget(globalId(id));
    this.input.dropQueued({ id }, 'detached');
    await this.link.call(RelayMethod.detach, { id }, true);
  }

  /** Writes still waiting for the relay's acknowledgement. */
  get pendingInputCount(): number {
    return this.input.pendingCount;
  }

  async write(id: string, data: string | Uint8Array): Promise<void> {
    this.check();
    const bytes = inputBytes(data);
    // First contact must succeed before input can be queued; later outages queue it.
    if (!this.link.hasConnected || this.link.state.state === 'lost') await this.link.whenConnected();
    return this.input.submit(id, bytes);
  }

  async resize(id: string, cols: number, rows: number): Promise<void> {
    await this.call(RelayMethod.resize, { id, cols, rows }, true);
  }

  async shutdown(id: string, opts: ShutdownOptions = {}): Promise<void> {
    await this.call(RelayMethod.shutdown, { id, ...opts });
    this.streams.forget(globalId(id));
    this.resume.forget(globalId(id));
  }

  /** Types `data` and waits for the stub's end reason (see docs/agents.md). Not retried after a drop. */
  async agentSend(id: string, data: string, opts: AgentSendOptions): Promise<AgentSendResult> {
    const r = await this.call(RelayMethod.agentSend, { id, data, ...opts });
    return parseWire(agentSendResultSchema, r, 'agentSend result', 'PROTOCOL_ERROR');
  }

  /** A page of a terminal's raw output history (IPtyProvider.readHistory). */
  async readHistory(id: string, opts: { fromSeq?: number; maxBytes?: number } = {}): Promise<PtyHistoryPage> {
    const r = await this.call(RelayMethod.history, { id, ...opts }, true);
    const page = parseWire(relayHistoryPageSchema, r, 'history result', 'PROTOCOL_ERROR');
    return { ...page, data: Buffer.from(page.data, 'base64') };
  }

  async agentRead(id: string, opts: AgentReadOptions = {}): Promise<AgentReadResult> {
    const r = await this.call(RelayMethod.agentRead, { id, ...opts }, true);
    return parseWire(agentReadResultSchema, r, 'agentRead result', 'PROTOCOL_ERROR');
  }

  /** The commands the terminal's shell ran (shell integration), newest first (docs/agents.md). */
  async commands(id: string, opts: AgentCommandsOptions = {}): Promise<AgentCommandsResult> {
    const r = await this.call(RelayMethod.commands, { id, ...opts }, true);
    return parseWire(commandsResultSchema, r, 'commands result', 'PROTOCOL_ERROR');
  }

  /** One code-navigation query on `host` (docs/lsp.md), in the seam's 0-based UTF-16 positions. */
  async lspQuery(host: string, query: LspQuery): Promise<LspQueryResult> {
    const r = await this.call(RelayMethod.lspQuery, { host, query });
    return parseWire(lspQueryResultSchema, r, 'lspQuery result', 'PROTOCOL_ERROR');
  }

  /** The nearest ancestor of `filePath` on `host` holding `.git`, or null. */
  async lspRoot(host: string, filePath: string): Promise<string | null> {
    const r = await this.call(RelayMethod.lspRoot, { host, filePath }, true);
    return parseWire(lspRootResultSchema, r, 'lspRoot result', 'PROTOCOL_ERROR').root;
  }

  async sendSignal(id: string, signal: string): Promise<void> {
    await this.call(RelayMethod.signal, { id, signal });
  }

  async getCwd(id: string): Promise<string | undefined> {
    return (await this.call<RelayResults['getCwd']>(RelayMethod.getCwd, { id }, true)).cwd;
  }

  async getForegroundProcess(id: string): Promise<ForegroundProcess | undefined> {
    const r = await this.call<RelayResults['getForegroundProcess']>(
      RelayMethod.getForegroundProcess,
      { id },
      true,
    );
    return r.process;
  }

  async hasChildProcesses(id: string): Promise<boolean> {
    return (await this.call<RelayResults['hasChildProcesses']>(RelayMethod.hasChildProcesses, { id }, true))
      .value;
  }

  async listProcesses(): Promise<PtyProcessInfo[]> {
    return this.listTerminals();
  }

  /** Terminals of every host (or one), with the relay's claim holder in `owner`. */
  async listTerminals(host?: string): Promise<RelayTerminalInfo[]> {
    return (await this.listing(host)).terminals;
  }

  /**
   * Terminals of every host (or one) and the hosts the listing left out: the relay answers within
   * about 2 s with what reachable hosts hold, and names every other host with its state and cause.
   */
  async listing(host?: string): Promise<RelayListing> {
    const r = await this.call<Partial<RelayListing>>(RelayMethod.list, host ? { host } : {}, true);
    return { terminals: r.terminals ?? [], unavailable: r.unavailable ?? [] };
  }

  /** The key an SSH host presents now (no login) and what the relay's known_hosts says about it. */
  async hostKey(host: string): Promise<HostKeyInfo> {
    return this.call<HostKeyInfo>(RelayMethod.hostKey, { host });
  }

  /** Records an SSH host's key at the relay, once a person confirmed `fingerprint`. */
  async trustHostKey(
    host: string,
    fingerprint: string,
    opts: { replace?: boolean } = {},
  ): Promise<HostKeyInfo> {
    return this.call<HostKeyInfo>(RelayMethod.trustHostKey, {
      host,
      fingerprint,
      replace: opts.replace === true,
    });
  }

  /** Per-user daemons on every host (or `host`): build, pid, sessions, relays attached. */
  async daemons(host?: string): Promise<RelayDaemonInfo[]> {
    return (await this.daemonListing(host)).daemons;
  }

  /** {@link daemons} and the hosts the listing left out (unreachable, slow, untrusted). */
  async daemonListing(
    host?: string,
  ): Promise<{ daemons: RelayDaemonInfo[]; unavailable: HostUnavailable[] }> {
    const r = await this.call<RelayResults['daemons']>(RelayMethod.daemons, host ? { host } : {}, true);
    return { daemons: r.daemons, unavailable: r.unavailable ?? [] };
  }

  /** Ends a host's daemon (the current build's, or `build`'s) and every session in it. */
  async stopDaemon(host: string, build?: string): Promise<RelayDaemonInfo> {
    return (await this.call<RelayResults['stopDaemon']>(RelayMethod.stopDaemon, { host, build })).stopped;
  }

  /** Configured hosts of the relay and the relay's link state to each. */
  async hosts(): Promise<HostInfo[]> {
    return (await this.call<RelayResults['hosts']>(RelayMethod.hosts, {}, true)).hosts;
  }

  async probePtyLiveness(id: string): Promise<boolean | undefined> {
    try {
      return (await this.call<RelayResults['probe']>(RelayMethod.probe, { id }, true)).alive ?? undefined;
    } catch {
      return undefined;
    }
  }

  async getBufferSnapshot(id: string, opts: { scrollbackRows?: number } = {}): Promise<ScreenSnapshot> {
    return this.call<ScreenSnapshot>(RelayMethod.snapshot, { id, ...opts }, true);
  }

  async clearBuffer(id: string): Promise<void> {
    await this.call(RelayMethod.clear, { id }, true);
  }

  async pauseProducer(id: string): Promise<void> {
    await this.call(RelayMethod.pause, { id }, true);
  }

  async resumeProducer(id: string): Promise<void> {
    await this.call(RelayMethod.resume, { id }, true);
  }

  async setPtyBackgrounded(id: string, background: boolean): Promise<void> {
    await this.call(RelayMethod.setBackgrounded, { id, background }, true);
    // Re-attaches after a reconnect keep the wish (the relay counts each viewer's).
    this.resume.setHidden(globalId(id), background);
  }

  acknowledgeDataEvent(id: string, bytes: number): void {
    if (!this.manualAck || !(bytes > 0)) return;
    const t = this.streams.get(globalId(id));
    if (!t) return;
    t.consumerSeq = Math.min(t.consumerSeq + bytes, t.seq);
    this.acks.queue(t.id, t.consumerSeq);
  }

  onData(listener: (e: PtyDataEvent) => void): Unsubscribe {
    return this.streams.data.on(listener);
  }

  onExit(listener: (e: PtyExitEvent) => void): Unsubscribe {
    return this.streams.exit.on(listener);
  }

  onFact(listener: (e: PtyFactEvent) => void): Unsubscribe {
    return this.streams.fact.on(listener);
  }

  onBackgroundStreamEvent(listener: (e: PtyBackgroundStreamEvent) => void): Unsubscribe {
    return this.streams.background.on(listener);
  }

  /** The link to the relay (host `relay`) and the relay's links to its hosts. */
  onLinkState(listener: (e: LinkStateEvent) => void): Unsubscribe {
    return this.linkStates.on(listener);
  }

  /** Steps of the relay connecting to a host and deploying its stub (shown by the CLI). */
  onHostProgress(listener: (e: HostProgress) => void): Unsubscribe {
    return this.hostProgress.on(listener);
  }

  onReattach(listener: (e: PtyReattachEvent) => void): Unsubscribe {
    return this.streams.reattach.on(listener);
  }

  /** Drops the WebSocket as a network failure would (tests); the client reconnects and resumes. */
  dropConnection(): void {
    this.link.drop();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.acks.dispose();
    this.resume.dispose();
    this.link.dispose();
    this.input.failAll(new PtyRelayError('DISPOSED', 'RelayClient was disposed'));
    this.streams.clear();
    this.linkStates.clear();
    this.hostProgress.clear();
  }

  private check(): void {
    if (this.disposed) throw new PtyRelayError('DISPOSED', 'RelayClient was disposed');
  }

  private call<T = unknown>(method: string, params: unknown, retry = false): Promise<T> {
    return this.disposed
      ? Promise.reject(new PtyRelayError('DISPOSED', 'RelayClient was disposed'))
      : this.link.call<T>(method, params, retry);
  }
}

/** Ids are `<host>/<id>`; a bare id names a terminal of the `local` host (as the relay reads it). */
function globalId(id: string): string {
  return id.includes('/') ? id : `local/${id}`;
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(new PtyRelayError('ABORTED', 'spawn aborted')), {
        once: true,
      });
    }),
  ]);
}
