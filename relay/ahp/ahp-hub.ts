import type { IPtyProvider, Unsubscribe } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { eachProvider } from '../core/each-provider.js';
import { unavailableByState } from '../core/host-listing.js';
import type { Logger } from '../core/log.js';
import type { HostRouter } from '../core/rpc-types.js';
import { backgroundFor, type RouterBackground } from '../flow/background-by-viewers.js';
import { creditFor, type TerminalCredit } from '../flow/terminal-credit.js';
import {
  claimHolder,
  type TerminalClaim,
  type TerminalRecord,
  type TerminalRegistry,
} from '../terminals/terminal-registry.js';
import { ActionLog, type LogEntry } from './action-log.js';
import { type AhpPeer, PeerSet } from './ahp-peers.js';
import { PendingEvents } from './pending-events.js';
import { resyncActions } from './resync-actions.js';
import { RootCatalog } from './root-catalog.js';
import { type ChannelInit, type RawSegment, TerminalChannel } from './terminal-channel.js';
import {
  type ActionOrigin,
  type MalformedClientAction,
  ROOT_URI,
  type Snapshot,
  type StateAction,
  type TerminalAction,
  type URI,
} from './types.js';
import { parseTerminalUri, pathToUri, uriToPath } from './uris.js';

/** Tunables of the AHP channel (see docs/config.md `limits` and `flowControl`). */
export interface AhpLimits {
  /** Bound of a terminal's content in snapshots (UTF-16 code units). */
  contentLimit: number;
  replayActions: number;
  replayBytes: number;
  highWatermark: number;
  lowWatermark: number;
}

/** True when both claims name the same holder (and the same turn/tool call). */
export function sameClaim(a: TerminalClaim, b: TerminalClaim): boolean {
  if (claimHolder(a) !== claimHolder(b)) return false;
  if (a.kind === 'session' && b.kind === 'session') {
    return a.turnId === b.turnId && a.toolCallId === b.toolCallId;
  }
  return true;
}

/**
 * The server side of the AHP channel, independent of JSON-RPC: per-terminal states fed by the
 * providers, the root catalog mirrored from the TerminalRegistry, the action log that numbers
 * every envelope, and the connected peers. Changes made to the registry by other extensions
 * are reflected as actions too, so every subscriber sees one consistent history.
 */
export class AhpHub {
  readonly actionLog: ActionLog;
  readonly catalog: RootCatalog;
  readonly peers: PeerSet;
  readonly channels = new Map<string, TerminalChannel>();
  private readonly pending = new Pending();
  private readonly offs: Unsubscribe[] = [];
  private readonly credit: TerminalCredit;
  private readonly background: RouterBackground;
  /** Per channel: the stream position its output reached when last delivered to its peers. */
  private readonly delivered = new WeakMap<TerminalChannel, number>();

  constructor(
    private readonly router: HostRouter,
    readonly registry: TerminalRegistry,
    private readonly limits: AhpLimits,
    private readonly log?: Logger,
  ) {
    this.actionLog = new ActionLog(limits.replayActions, limits.replayBytes);
    this.catalog = new RootCatalog(registry, () =>
      router.hosts().flatMap((h) => unavailableByState(h, router.linkState(h)) ?? []),
    );
    this.peers = new PeerSet(this.actionLog, { high: limits.highWatermark, low: limits.lowWatermark }, log);
    this.credit = creditFor(router);
    this.background = backgroundFor(router);
    this.peers.onChange = () => this.reportCredit();
    this.peers.resync = (peer) => this.resyncEntries(peer);
    for (const r of registry.list()) this.openChannel(this.initFromRecord(r));
    this.subscribe();
  }

  private subscribe(): void {
    this.offs.push(eachProvider(this.router, (p) => this.subscribeTo(p)));
    this.offs.push(this.registry.changed.on(() => this.syncRegistry()));
  }

  private subscribeTo(p: IPtyProvider): void {
    const offLink = p.onLinkState?.(() => this.syncHosts());
    if (offLink) this.offs.push(offLink);
    this.offs.push(
      p.onData((e) => this.feed(e.id, e.incarnationId, { kind: 'data', seq: e.seq, data: e.data })),
      p.onFact((e) => this.feed(e.id, e.incarnationId, { kind: 'fact', seq: e.seq, fact: e.fact })),
      p.onExit((e) => this.feed(e.id, e.incarnationId, { kind: 'exit', exitCode: e.exitCode })),
    );
    if (p.onReattach) {
      this.offs.push(
        p.onReattach((e) =>
          this.feed(e.id, e.incarnationId, {
            kind: 'reset',
            snapshot: e.snapshot,
            expired: e.sessionExpired,
          }),
        ),
      );
    }
  }

  private feed(id: string, incarnationId: string, item: Parameters<TerminalChannel['push']>[0]): void {
    const ch = this.channels.get(id);
    if (ch && ch.incarnationId === incarnationId) ch.push(item);
    // Not published yet (or a new process reusing an id after a daemon restart): keep for later.
    else this.pending.push(id, incarnationId, item);
  }

  private initFromRecord(r: TerminalRecord): ChannelInit {
    return {
      id: r.id,
      incarnationId: r.incarnationId,
      title: r.title,
      claim: r.claim,
      cwd: r.cwd,
      cols: r.cols,
      rows: r.rows,
      exitCode: r.exitCode,
      nextSeq: 0,
      historyMissing: true,
      alias: r.alias,
    };
  }

  /**
   * Creates the channel of a terminal about to be published, seeds it with the spawn replay and
   * hands it the events that arrived before. Call before `registry.add`.
   */
  openChannel(init: ChannelInit, replay?: { data: Uint8Array; seq: number }): TerminalChannel {
    // A channel rebuilt with its history (adoptTerminal) keeps the events its predecessor had queued:
    // they may follow the attach that fetched the history, and are trimmed by seq where they overlap.
    const old = this.channels.get(init.id);
    const carried = old?.incarnationId === init.incarnationId ? old.takeQueued() : [];
    old?.dispose();
    const ch = new TerminalChannel(
      init.id,
      init,
      (c, a, raw) => this.onChannelAction(c, a, raw),
      this.limits.contentLimit,
    );
    if (replay) ch.seed(replay.data, replay.seq);
    this.channels.set(init.id, ch);
    for (const item of [...carried, ...this.pending.take(init.id, init.incarnationId)]) ch.push(item);
    return ch;
  }

  private onChannelAction(ch: TerminalChannel, action: TerminalAction | undefined, raw?: RawSegment): void {
    if (this.channels.get(ch.id) !== ch) return;
    if (!action) {
      if (raw) this.peers.deliver(undefined, { channel: ch.uri, segment: raw });
    } else this.dispatch(ch, action, undefined, raw);
    if (raw) {
      this.delivered.set(ch, raw.seq + raw.data.length);
      this.reportChannel(ch);
    }
  }

  /**
   * The AHP peers of a channel are one consumer toward the provider's credit: at the position
   * its output reached, lagging when every subscribed peer is behind (so a stalled browser tab
   * never holds the program while another reads; all stalled, the PTY pauses). Without
   * subscribers the channel consumes nothing and the terminal runs free.
   */
  private reportChannel(ch: TerminalChannel): void {
    let subscribed = false;
    let keeping = false;
    for (const p of this.peers.all()) {
      if (!p.subscriptions.has(ch.uri)) continue;
      subscribed = true;
      if (p.behindFrom === undefined) keeping = true;
    }
    if (subscribed) this.credit.report(ch.id, ch, this.delivered.get(ch) ?? 0, !keeping);
    else this.credit.drop(ch.id, ch);
    // AHP has no background: a channel with subscribers keeps its terminal in the foreground,
    // whatever a hidden web tab asked for (relay/flow/background-by-viewers.ts).
    if (subscribed) {
      this.background.vote(ch.id, this, false).catch((err: Error) => {
        this.background.leave(this, ch.id);
        this.log?.debug({ id: ch.id, err: err.message }, 'ahp: background vote not applied');
      });
    } else this.background.leave(this, ch.id, (f, m) => this.log?.warn(f, m));
  }

  /** Re-reports every channel (a peer lagged, caught up, subscribed or left). */
  reportCredit(): void {
    for (const ch of this.channels.values()) this.reportChannel(ch);
  }

  /** Applies a terminal action, mirrors it into the registry, logs it and delivers it. */
  dispatch(ch: TerminalChannel, action: TerminalAction, origin?: ActionOrigin, raw?: RawSegment): LogEntry {
    ch.apply(action);
    const entry = this.actionLog.append(ch.uri, action, origin);
    this.peers.deliver(entry, raw ? { channel: ch.uri, segment: raw } : undefined);
    this.mirror(ch.id, action);
    return entry;
  }

  /**
   * For a peer that fell out of the action log: logs, visible to its client only, the actions
   * that bring every channel it follows to the current state (root: the catalog; terminals:
   * `terminal/cleared`, the content and the metadata). Undefined for a peer without a client id.
   */
  private resyncEntries(peer: AhpPeer): LogEntry[] | undefined {
    const onlyClientId = peer.clientId;
    if (onlyClientId === undefined) return undefined;
    const out: LogEntry[] = [];
    for (const uri of peer.subscriptions) {
      if (uri === ROOT_URI) {
        const action: StateAction = {
          type: 'root/terminalsChanged',
          terminals: this.catalog.current.terminals,
        };
        out.push(this.actionLog.append(ROOT_URI, action, undefined, { onlyClientId }));
        const hosts: StateAction = {
          type: 'root/hostsChanged',
          unavailableHosts: this.catalog.current.unavailableHosts,
        };
        out.push(this.actionLog.append(ROOT_URI, hosts, undefined, { onlyClientId }));
        continue;
      }
      const ch = this.channelByUri(uri);
      if (!ch) continue;
      for (const action of resyncActions(ch.snapshotState())) {
        out.push(this.actionLog.append(ch.uri, action, undefined, { onlyClientId }));
      }
    }
    return out;
  }

  /** Sends an envelope only to connections of `clientId` (input echoes, rejections). */
  notifyOrigin(
    channel: URI,
    action: StateAction | MalformedClientAction,
    origin: ActionOrigin,
    rejectionReason?: string,
  ): LogEntry {
    const entry = this.actionLog.append(channel, action, origin, {
      rejectionReason,
      onlyClientId: origin.clientId,
    });
    this.peers.deliver(entry);
    return entry;
  }

  private mirror(id: string, action: TerminalAction): void {
    if (!this.registry.find(id)) return;
    switch (action.type) {
      case 'terminal/titleChanged':
        this.registry.update(id, { title: action.title });
        break;
      case 'terminal/resized':
        this.registry.update(id, { cols: action.cols, rows: action.rows });
        break;
      case 'terminal/claimed':
        this.registry.update(id, { claim: action.claim });
        break;
      case 'terminal/exited':
        this.registry.update(id, { exitCode: action.exitCode });
        break;
      case 'terminal/cwdChanged':
        this.registry.update(id, { cwd: uriToPath(action.cwd) });
        break;
      default:
        break;
    }
  }

  /** Brings channels and the root catalog in line with the registry after any change. */
  private syncRegistry(): void {
    const seen = new Set<string>();
    for (const r of this.registry.list()) {
      seen.add(r.id);
      const ch = this.channels.get(r.id);
      if (!ch || ch.incarnationId !== r.incarnationId) {
        this.openChannel(this.initFromRecord(r));
        continue;
      }
      // Provider events still queued come first (another extension may have recorded an exit or
      // title from the same events already); afterwards only genuine registry edits differ.
      ch.flush();
      const s = ch.state;
      if (!sameClaim(s.claim, r.claim)) this.dispatch(ch, { type: 'terminal/claimed', claim: r.claim });
      if (s.title !== r.title) this.dispatch(ch, { type: 'terminal/titleChanged', title: r.title });
      if (s.cols !== r.cols || s.rows !== r.rows) {
        this.dispatch(ch, { type: 'terminal/resized', cols: r.cols, rows: r.rows });
      }
      if (r.cwd !== undefined && s.cwd !== pathToUri(r.cwd)) {
        this.dispatch(ch, { type: 'terminal/cwdChanged', cwd: pathToUri(r.cwd) });
      }
      if (r.exitCode !== undefined && s.exitCode !== r.exitCode) {
        this.dispatch(ch, { type: 'terminal/exited', exitCode: r.exitCode });
      }
    }
    for (const [id, ch] of this.channels) {
      if (seen.has(id)) continue;
      ch.dispose();
      this.channels.delete(id);
      this.peers.forgetChannel(ch.uri);
      this.credit.drop(id, ch);
    }
    const changed = this.catalog.refresh();
    if (changed) {
      this.catalog.apply(changed);
      this.peers.deliver(this.actionLog.append(ROOT_URI, changed));
    }
  }

  /** Tells root subscribers when the set of hosts that are down changed. */
  private syncHosts(): void {
    const changed = this.catalog.refreshHosts();
    if (!changed) return;
    this.catalog.apply(changed);
    this.peers.deliver(this.actionLog.append(ROOT_URI, changed));
  }

  /** The channel a terminal URI names, or NOT_FOUND. */
  channelOf(uri: unknown): TerminalChannel {
    const ch = typeof uri === 'string' ? this.channelByUri(uri) : undefined;
    if (!ch || !this.registry.find(ch.id)) {
      throw new PtyRelayError('NOT_FOUND', `no terminal ${String(uri)}`, { channel: uri });
    }
    return ch;
  }

  /** The channel named by exactly this URI (a terminal has one: its alias or its minted URI). */
  private channelByUri(uri: string): TerminalChannel | undefined {
    const id = parseTerminalUri(uri)?.id;
    if (id !== undefined) {
      const ch = this.channels.get(id);
      return ch?.uri === uri ? ch : undefined;
    }
    for (const ch of this.channels.values()) if (ch.uri === uri) return ch;
    return undefined;
  }

  /** Snapshot of the root channel or of a terminal channel, at the current server seq. */
  snapshot(uri: URI): Snapshot {
    if (uri === ROOT_URI) {
      return { resource: ROOT_URI, state: this.catalog.current, fromSeq: this.actionLog.serverSeq };
    }
    const ch = this.channelOf(uri);
    return { resource: ch.uri, state: ch.snapshotState(), fromSeq: this.actionLog.serverSeq };
  }

  /** Whether `uri` names a channel that exists now. */
  exists(uri: URI): boolean {
    if (uri === ROOT_URI) return true;
    try {
      this.channelOf(uri);
      return true;
    } catch {
      return false;
    }
  }

  dispose(): void {
    for (const off of this.offs.splice(0)) off();
    for (const ch of this.channels.values()) ch.dispose();
    this.channels.clear();
    this.pending.clear();
    this.peers.stop();
  }
}

/** PendingEvents keyed by incarnation too, so a stale process's events never reach a new one. */
class Pending {
  private readonly events = new PendingEvents();

  push(id: string, incarnationId: string, item: Parameters<TerminalChannel['push']>[0]): void {
    this.events.push(`${id}\u0000${incarnationId}`, item);
  }

  take(id: string, incarnationId: string): ReturnType<PendingEvents['take']> {
    return this.events.take(`${id}\u0000${incarnationId}`);
  }

  clear(): void {
    this.events.clear();
  }
}
