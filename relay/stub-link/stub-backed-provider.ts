/**
 * IPtyProvider over stub links, one per host: the requests (spawn, attach, write, the calls on
 * one terminal, history and agent reads) with ids mapped to `<host>/<id>` and daemon errors
 * rewritten to global ids. The links themselves (connect, reconnect, input queues, which daemon
 * serves a terminal, daemon admin) are the base class StubLinks (stub-links.ts); the events the
 * links carry reach listeners through StubEventFanout (stub-event-fanout.ts), which also guards
 * incarnations and credits delivered bytes.
 */

import type {
  AgentCommandsOptions,
  AgentCommandsResult,
  AgentReadOptions,
  AgentReadResult,
  AgentSendOptions,
  AgentSendResult,
  ForegroundProcess,
  IPtyProvider,
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
import { PtyRelayError } from '../../provider/errors.js';
import { inputBytes } from '../../provider/input/input-bytes.js';
import type { LspQuery, LspQueryResult } from '../../provider/lsp-seam.js';
import {
  agentReadResultSchema,
  agentSendResultSchema,
  parseWire,
} from '../../provider/wire/agent-messages.js';
import { commandsResultSchema } from '../../provider/wire/command-messages.js';
import { historyPageSchema } from '../../provider/wire/history-messages.js';
import type { LspHostConfig } from '../../provider/wire/lsp-messages.js';
import type { StubAttachResult, StubSpawnParams } from '../../provider/wire/messages.js';
import type { StubClient } from './stub-client.js';
import { StubEventFanout } from './stub-event-fanout.js';
import { StubLinks } from './stub-links.js';
import { lspQueryOver, lspRootOver } from './stub-lsp.js';
import { globalizeError, toSpawnResult } from './terminal-ids.js';

export type { LinkPolicy } from './link-policy.js';
export { globalTerminalId, routeTerminalId, splitTerminalId } from './terminal-ids.js';

/** An agent send's answer may come this much after its own timeout (the daemon's final poll, the link). */
const AGENT_SEND_REPLY_MARGIN_MS = 30_000;

/**
 * IPtyProvider over stub links, one per host. Subclasses say how to reach a host's daemon
 * (`openLink`); this class maps ids to `<host>/<id>`, guards incarnations and fans out events.
 */
export abstract class StubBackedProvider extends StubLinks implements IPtyProvider {
  private readonly events = new StubEventFanout({
    globalId: (host, localId) => this.daemons.globalId(host, localId),
    connectedClient: (host) => this.hostLinks.get(host)?.connectedClient,
    manualAck: () => this.linkPolicy.manualAck,
  });

  protected wireLink(host: string, client: StubClient): void {
    this.events.wire(host, client);
  }

  protected reattachHost(host: string, client: StubClient): Promise<void> {
    return this.events.reattachHost(host, client);
  }

  protected override daemonStopped(key: string): void {
    this.events.expireHost(key);
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
    const bytes = inputBytes(data);
    const link = this.hostLink(host);
    // First contact must succeed before input can be queued; later outages queue it.
    if (link.state.state === 'idle' || link.state.state === 'connecting') await link.get();
    // Known ids go straight to their queue, so writes keep their order.
    if (this.daemons.unrouted(id)) ({ host, localId } = await this.locate(id));
    await this.inputChannel(host).submit(localId, bytes, {
      ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
      ...(opts.origin ? { origin: opts.origin } : {}),
    });
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
    this.events.forget(key);
    this.daemons.ended(key);
  }

  async sendSignal(id: string, signal: string): Promise<void> {
    await this.call(id, 'signal', { signal });
  }

  async claimOwner(id: string, owner: string, opts: { ifUnowned?: boolean } = {}): Promise<string> {
    return (await this.call<{ owner: string }>(id, 'claim', { owner, ...opts })).owner;
  }

  async agentSeen(ids: string[], seenAt: number): Promise<void> {
    const byDaemon = new Map<string, string[]>();
    for (const id of ids) {
      const { host, localId } = this.resolve(id);
      byDaemon.set(host, [...(byDaemon.get(host) ?? []), localId]);
    }
    await Promise.all(
      [...byDaemon].map(async ([host, local]) =>
        (await this.link(host)).call('agentSeen', { ids: local, seenAt }),
      ),
    );
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
    // A daemon of an earlier build ignores `from` and `command` and answers by offset: never pass
    // that off as log lines or as a command's output.
    const unread =
      opts.command !== undefined && page.command === undefined
        ? 'by command'
        : opts.from !== undefined && page.historyStartLine === undefined
          ? 'by line (from)'
          : undefined;
    if (unread)
      throw new PtyRelayError(
        'INVALID_ARGUMENT',
        `${id}: its daemon (an earlier build) cannot read ${unread}`,
        {
          id,
        },
      );
    return page;
  }

  async commands(id: string, opts: AgentCommandsOptions = {}): Promise<AgentCommandsResult> {
    const result = await this.call(id, 'commands', opts);
    return parseWire(commandsResultSchema, result, 'commands result', 'PROTOCOL_ERROR');
  }

  /** A code-navigation query on `host`'s daemon, with the host's provider config (docs/lsp.md). */
  async lspQuery(
    host: string,
    query: LspQuery,
    config: LspHostConfig,
    signal?: AbortSignal,
  ): Promise<LspQueryResult> {
    return lspQueryOver(await this.link(host), query, config, signal);
  }

  /** The nearest ancestor of `filePath` on `host` that holds `.git`, or null. */
  async lspRoot(host: string, filePath: string): Promise<string | null> {
    return lspRootOver(await this.link(host), filePath);
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
    this.events.consumed(this.canonical(id), bytes);
  }

  acknowledgeDataTo(id: string, incarnationId: string, seq: number): void {
    if (!this.linkPolicy.manualAck || !Number.isFinite(seq)) return;
    this.events.consumedTo(this.canonical(id), incarnationId, seq);
  }

  onData(listener: (e: PtyDataEvent) => void): Unsubscribe {
    return this.events.data.on(listener);
  }

  onExit(listener: (e: PtyExitEvent) => void): Unsubscribe {
    return this.events.exit.on(listener);
  }

  onFact(listener: (e: PtyFactEvent) => void): Unsubscribe {
    return this.events.fact.on(listener);
  }

  onBackgroundStreamEvent(listener: (e: PtyBackgroundStreamEvent) => void): Unsubscribe {
    return this.events.background.on(listener);
  }

  onReattach(listener: (e: PtyReattachEvent) => void): Unsubscribe {
    return this.events.reattach.on(listener);
  }

  /** Closes every link and listener; PTYs keep running in their daemons. */
  protected override disposeLinks(): void {
    this.events.disposeAcks();
    super.disposeLinks();
    this.events.clear();
  }

  abstract dispose(): Promise<void>;
}
