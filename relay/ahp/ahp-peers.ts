import { encodeDataFrameParts } from '../../provider/wire/frame-codec.js';
import type { Logger } from '../core/log.js';
import type { RpcConnection } from '../core/rpc-types.js';
import { type ActionLog, entryText, type LogEntry } from './action-log.js';
import { seesEverything, visibleEnvelope } from './root-catalog-filter.js';
import type { RawSegment } from './terminal-channel.js';
import { ROOT_URI } from './types.js';

/** Socket bytes queued above which a connection stops receiving live envelopes. */
export const DEFAULT_HIGH_WATERMARK = 1024 * 1024;
/** …and below which it is caught up from the action log. */
export const DEFAULT_LOW_WATERMARK = 256 * 1024;
/** How often lagging connections are checked for drained sockets. */
const DRAIN_POLL_MS = 20;
/** WebSocket close code for "too far behind: reconnect" (application range). */
export const CLOSE_TOO_FAR_BEHIND = 4008;

/** A connection the server can close (the relay server's connections can). */
interface Closable {
  close(code?: number, reason?: string): void;
}

/** AHP state of one WebSocket connection. */
export interface AhpPeer {
  conn: RpcConnection;
  clientId: string | undefined;
  /** Channels this connection is subscribed to. */
  subscriptions: Set<string>;
  /** Binary Data frames instead of `terminal/data` JSON. */
  rawData: boolean;
  /** Set while the socket is over the high watermark: the first server seq it has not been sent. */
  behindFrom?: number;
  /** Deliveries held back until a pending reply (snapshot, replay) has gone out. */
  held?: Array<{ entry?: LogEntry; raw?: RawSegment }>;
}

/**
 * Delivers envelopes to subscribed connections with backpressure: a connection whose socket
 * buffer passes the high watermark stops getting live envelopes; once it drains below the low
 * watermark it is caught up, in order, from the action log. If the log no longer holds what it
 * missed, it is resynchronized in place ({@link PeerSet.resync}: `terminal/cleared` and the
 * current state of each channel it follows, then live envelopes); only a peer that cannot be
 * resynchronized is closed (4008) and reconnects for snapshots.
 */
export class PeerSet {
  private readonly peers = new Map<string, AhpPeer>();
  private timer: NodeJS.Timeout | undefined;
  /** Called when a peer starts or stops lagging, or leaves (credit is re-derived). */
  onChange?: () => void;
  /**
   * Logs, for `peer` alone, the envelopes that bring each channel it follows to its current
   * state (undefined when that is not possible). Without it, such a peer is closed with 4008.
   */
  resync?: (peer: AhpPeer) => LogEntry[] | undefined;

  constructor(
    private readonly log: ActionLog,
    private readonly watermarks: { high: number; low: number },
    private readonly logger?: Logger,
  ) {}

  add(conn: RpcConnection): AhpPeer {
    let p = this.peers.get(conn.connectionId);
    if (!p) {
      p = { conn, clientId: conn.clientId, subscriptions: new Set(), rawData: false };
      this.peers.set(conn.connectionId, p);
    }
    return p;
  }

  get(conn: RpcConnection): AhpPeer | undefined {
    return this.peers.get(conn.connectionId);
  }

  remove(conn: RpcConnection): void {
    if (this.peers.delete(conn.connectionId)) this.onChange?.();
  }

  /** Drops a channel from every subscription set (the terminal is gone). */
  forgetChannel(channel: string): void {
    for (const p of this.peers.values()) p.subscriptions.delete(channel);
  }

  /** Whether `peer` is to receive `entry`. */
  static wants(peer: AhpPeer, entry: LogEntry): boolean {
    if (entry.onlyClientId !== undefined) return entry.onlyClientId === peer.clientId;
    return peer.subscriptions.has(entry.channel);
  }

  /** Sends a just-logged entry (or, for rawData peers, its raw bytes) to every peer that wants it. */
  deliver(entry: LogEntry | undefined, raw?: { channel: string; segment: RawSegment }): void {
    for (const p of this.peers.values()) {
      if (p.behindFrom !== undefined) continue;
      if (raw && p.rawData) {
        if (p.subscriptions.has(raw.channel)) this.out(p, { raw: raw.segment });
        continue;
      }
      if (entry && PeerSet.wants(p, entry)) this.out(p, { entry });
    }
    this.checkPressure();
  }

  /**
   * Holds `peer`'s deliveries until the next turn of the event loop. A method that returns a
   * snapshot or a replay calls this, so its reply (sent a few microtasks later) reaches the
   * client before any envelope that follows the snapshot's `fromSeq`.
   */
  holdUntilReplied(peer: AhpPeer): void {
    if (peer.held) return;
    peer.held = [];
    setImmediate(() => {
      const held = peer.held ?? [];
      peer.held = undefined;
      if (!this.peers.has(peer.conn.connectionId)) return;
      for (const h of held) this.out(peer, h);
      this.checkPressure();
    });
  }

  private out(p: AhpPeer, d: { entry?: LogEntry; raw?: RawSegment }): void {
    if (p.held) p.held.push(d);
    else if (d.raw) this.sendRaw(p, d.raw);
    else if (d.entry) this.send(p, d.entry);
  }

  private send(p: AhpPeer, entry: LogEntry): void {
    // A token limited to some terminals gets the root catalog filtered (one text per such peer).
    if (!seesEverything(p.conn.grant) && entry.channel === ROOT_URI) {
      p.conn.notify('action', visibleEnvelope(p.conn.grant, entry.envelope));
    } else if (p.conn.sendRawText) p.conn.sendRawText(entryText(entry, this.log));
    else p.conn.notify('action', entry.envelope);
  }

  private sendRaw(p: AhpPeer, s: RawSegment): void {
    const [head, data] = encodeDataFrameParts(s.id, s.incarnationId, s.seq, s.data);
    p.conn.sendBinary([head, data]);
  }

  private checkPressure(): void {
    let lagging = false;
    let changed = false;
    for (const p of this.peers.values()) {
      if (p.behindFrom === undefined && p.conn.bufferedAmount > this.watermarks.high) {
        p.behindFrom = this.log.serverSeq + 1;
        changed = true;
        this.logger?.debug({ conn: p.conn.connectionId, seq: p.behindFrom }, 'ahp peer lagging');
      }
      if (p.behindFrom !== undefined) lagging = true;
    }
    if (lagging) this.timer ??= setInterval(() => this.drain(), DRAIN_POLL_MS);
    if (changed) this.onChange?.();
  }

  /** Catches up lagging peers whose sockets drained. */
  private drain(): void {
    let lagging = false;
    let changed = false;
    for (const p of this.peers.values()) {
      if (p.behindFrom === undefined) continue;
      if (p.conn.bufferedAmount > this.watermarks.low) {
        lagging = true;
        continue;
      }
      const missed = this.log.since(p.behindFrom - 1);
      const fresh = missed ? undefined : this.resync?.(p);
      if (fresh) {
        this.logger?.info(
          { conn: p.conn.connectionId, missedFrom: p.behindFrom, envelopes: fresh.length },
          'ahp peer fell out of the action log; resynchronized with the current state',
        );
        p.behindFrom = undefined;
        changed = true;
        for (const e of fresh) this.out(p, { entry: e });
        continue;
      }
      if (!missed) {
        this.logger?.info({ conn: p.conn.connectionId }, 'ahp peer too far behind; closing');
        this.peers.delete(p.conn.connectionId);
        changed = true;
        // Not wire data: the relay's own connection object; test doubles may lack close().
        (p.conn as Partial<Closable>).close?.(CLOSE_TOO_FAR_BEHIND, 'too far behind; reconnect');
        continue;
      }
      p.behindFrom = undefined;
      changed = true;
      for (const e of missed) {
        if (PeerSet.wants(p, e)) this.out(p, { entry: e });
        if (p.conn.bufferedAmount > this.watermarks.high) {
          p.behindFrom = e.serverSeq + 1;
          lagging = true;
          break;
        }
      }
    }
    if (!lagging) this.stop();
    if (changed) this.onChange?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  all(): IterableIterator<AhpPeer> {
    return this.peers.values();
  }
}
