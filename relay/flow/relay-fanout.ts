import type { WireAttachResult } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, PtyDataEvent, PtySpawnResult } from '../../provider/contract.js';
import { encodeDataFrameParts } from '../../provider/wire/frame-codec.js';
import type { TerminalCredit } from './terminal-credit.js';

/**
 * The relay's half of RelayClient's output stream (used by relay/service/pty-extension.ts; it
 * lives here, next to the client half, because both must agree on its rules): which connection
 * is attached to which terminal, the replay-then-live hand-over of an attach, and credit toward
 * the provider with socket backpressure. Transport-agnostic: a connection is a {@link FanoutSink}.
 */

/**
 * Encoded frames a connection may have queued before it counts as lagging (config
 * `flowControl.clientBufferBytes`): it then gets nothing more until its socket drained, and
 * resumes from the host's history at the seq it reached.
 */
export const DEFAULT_CLIENT_BUFFER_BYTES = 1024 * 1024;
const DRAIN_POLL_MS = 20;

/** What the fan-out needs of a connection (an RpcConnection satisfies it). */
export interface FanoutSink {
  sendBinary(parts: Uint8Array[]): void;
  notify(method: string, params: unknown): void;
  readonly bufferedAmount: number;
  /** Closes the connection (the client reconnects and resumes from its own seq). */
  close?(code?: number, reason?: string): void;
}

/**
 * A connection with this much queued although it gets no output (notifications only) is closed:
 * the last safety net, far above what a lagging consumer holds (config `flowControl.relayPendingCap`).
 */
export const SLOW_CONSUMER_CLOSE_BYTES = 64 * 1024 * 1024;
/** WebSocket close code for a connection dropped because it fell too far behind. */
export const SLOW_CONSUMER_CLOSE_CODE = 4009;

/** Resumes a lagging attachment: attach from its seq and hand the result to {@link RelayFanout.resumed}. */
export type Resumer = (a: Attachment) => void;

/** Options of {@link RelayFanout}. */
export interface FanoutOptions {
  credit: TerminalCredit;
  /** Queued bytes at which a connection's attachments lag (default {@link DEFAULT_CLIENT_BUFFER_BYTES}). */
  clientBufferBytes?: number;
  /** Queued bytes at which a connection is closed (default {@link SLOW_CONSUMER_CLOSE_BYTES}). */
  slowConsumerBytes?: number;
  resume?: Resumer;
  /** Output of `id` would have left a hole at `seq` (it got `got`); the view resumes instead. */
  onHole?: (id: string, seq: number, got: number) => void;
}

/** An event on its way to attached connections: output bytes or a JSON notification. */
export type FanoutEvent =
  | { kind: 'data'; e: PtyDataEvent }
  | {
      kind: 'note';
      method: string;
      params: unknown;
      /** The stream restarts here for every view (snapshot reset, foregrounding). */
      resetTo?: number;
      /** Bytes below this were dropped (background data gap): the stream continues there. */
      skipTo?: number;
    };

/** One connection attached to one terminal; `pending` holds events while its attach is in flight. */
export interface Attachment {
  readonly id: string;
  readonly sink: FanoutSink;
  sentSeq: number;
  /** Output this connection has consumed: the credit it allows toward the provider. */
  creditSeq: number;
  manualAck: boolean;
  pending?: FanoutEvent[];
  /** Its socket fell behind: no output is encoded for it until it drained and resumed. */
  lagging?: boolean;
}

/** Output held at most per spawn in flight (see {@link RelayFanout.capture}). */
const CAPTURE_MAX_BYTES = 4 * 1024 * 1024;

interface Capture {
  events: { id: string; ev: FanoutEvent }[];
  bytes: number;
}

interface SinkState {
  sink: FanoutSink;
  attachments: Map<string, Attachment>;
  drainTimer?: NodeJS.Timeout;
}

/**
 * Routes provider events to attached connections. Each attachment reports its position to the
 * shared {@link TerminalCredit} (on send, or by the client's own acks with `manualAck`); one whose
 * socket is more than `clientBufferBytes` behind lags: nothing more is encoded for it, its credit
 * no longer counts, and once its socket drained it resumes from the host's history (exact replay
 * from the seq it reached, or a snapshot reset). The relay so holds at most about that bound per
 * connection, however slow the client.
 */
export class RelayFanout {
  private readonly credit: TerminalCredit;
  private readonly clientBufferBytes: number;
  private readonly slowConsumerBytes: number;
  private readonly resume?: Resumer;
  private readonly onHole?: FanoutOptions['onHole'];

  constructor(opts: FanoutOptions) {
    this.credit = opts.credit;
    this.clientBufferBytes = opts.clientBufferBytes ?? DEFAULT_CLIENT_BUFFER_BYTES;
    this.slowConsumerBytes = Math.max(
      opts.slowConsumerBytes ?? SLOW_CONSUMER_CLOSE_BYTES,
      this.clientBufferBytes,
    );
    this.resume = opts.resume;
    this.onHole = opts.onHole;
  }

  /** Output that would have left a hole in a view (each one resumed it from history instead). */
  holes = 0;
  private readonly sinks = new Map<FanoutSink, SinkState>();
  private readonly byId = new Map<string, Set<Attachment>>();
  /** Event buffers of spawns in flight (their terminal id is unknown until the reply). */
  private readonly captures = new Set<Capture>();

  /** Subscribes `sink` to `id`; events are held until {@link complete}. Replaces an earlier attachment. */
  bind(sink: FanoutSink, id: string, manualAck: boolean, early: FanoutEvent[] = []): Attachment {
    const s = this.sinkState(sink);
    const old = s.attachments.get(id);
    if (old) this.detach(old);
    const a: Attachment = { id, sink, sentSeq: 0, creditSeq: 0, manualAck, pending: early };
    s.attachments.set(id, a);
    let set = this.byId.get(id);
    if (!set) {
      set = new Set();
      this.byId.set(id, set);
    }
    set.add(a);
    return a;
  }

  /** True while `a` is still the sink's attachment for its terminal. */
  isBound(a: Attachment): boolean {
    return this.sinks.get(a.sink)?.attachments.get(a.id) === a;
  }

  attachment(sink: FanoutSink, id: string): Attachment | undefined {
    return this.sinks.get(sink)?.attachments.get(id);
  }

  /**
   * Records events until the returned function is called with the spawned id. Only the newest
   * {@link CAPTURE_MAX_BYTES} are kept: what overtakes a reply shares its network read, so it is
   * always among the last events before the spawn resolves.
   */
  capture(): (id: string | undefined) => FanoutEvent[] {
    const cap: Capture = { events: [], bytes: 0 };
    this.captures.add(cap);
    return (id) => {
      this.captures.delete(cap);
      return cap.events.filter((c) => c.id === id).map((c) => c.ev);
    };
  }

  /**
   * Finishes an attach: sends the replay as one Data frame, then the events that overtook the
   * reply, then goes live. Returns the JSON result (replay described, not embedded).
   */
  complete(a: Attachment, r: PtySpawnResult, provider: IPtyProvider): WireAttachResult {
    const { replay, ...rest } = r;
    const value = r.providerSequence.value;
    const from = value - (replay?.length ?? 0);
    if (replay && replay.length > 0)
      a.sink.sendBinary(encodeDataFrameParts(r.id, r.incarnationId, from, replay));
    a.sentSeq = a.creditSeq = value;
    this.credit.open(provider, r.id, r.incarnationId, value);
    this.credit.report(r.id, a, a.creditSeq);
    const pending = a.pending ?? [];
    a.pending = undefined;
    for (const ev of pending) {
      if (ev.kind === 'data') {
        if (ev.e.incarnationId !== r.incarnationId) continue;
        // Output that was on its way before a reply whose stream continues below it (the host
        // catches this attach up from its history): the provider delivers it again, in order.
        if (ev.e.seq > a.sentSeq) continue;
      }
      this.deliver(a, ev);
    }
    return replay && replay.length > 0 ? { ...rest, replayFromSeq: from, replayBytes: replay.length } : rest;
  }

  /** A provider's output event. */
  data(e: PtyDataEvent): void {
    this.route(e.id, { kind: 'data', e });
  }

  /**
   * A notification for the connections attached to `id`. `resetTo`/`skipTo` move the stream
   * position of every view when the notification reaches it (in stream order).
   */
  note(id: string, method: string, params: unknown, seq: { resetTo?: number; skipTo?: number } = {}): void {
    this.route(id, { kind: 'note', method, params, ...seq });
  }

  /** The client's credit ack (`ptyrelay/ack`): switches the attachment to manual flow control. */
  ack(sink: FanoutSink, id: string, seq: number): void {
    const a = this.attachment(sink, id);
    if (!a) return;
    a.manualAck = true;
    a.creditSeq = Math.max(a.creditSeq, Math.min(seq, a.sentSeq));
    if (!a.pending) this.credit.report(id, a, a.creditSeq, a.lagging);
  }

  detach(a: Attachment): void {
    const s = this.sinks.get(a.sink);
    if (s?.attachments.get(a.id) === a) s.attachments.delete(a.id);
    const set = this.byId.get(a.id);
    set?.delete(a);
    if (set?.size === 0) this.byId.delete(a.id);
    this.credit.drop(a.id, a);
  }

  /** The connection closed: drop all its attachments. */
  dropSink(sink: FanoutSink): void {
    const s = this.sinks.get(sink);
    if (!s) return;
    clearInterval(s.drainTimer);
    for (const a of [...s.attachments.values()]) this.detach(a);
    this.sinks.delete(sink);
  }

  /** The terminal is gone: drop every attachment and its flow. */
  forget(id: string): void {
    for (const a of [...(this.byId.get(id) ?? [])]) this.detach(a);
    this.credit.forget(id);
  }

  /**
   * A lagging attachment's catch-up attach came back: a reset first sends the snapshot (as the
   * `reattach` notification every client already handles), then the replay and what arrived
   * meanwhile go out as for any attach. Ignored when the attachment was replaced or dropped.
   */
  resumed(a: Attachment, r: PtySpawnResult, provider: IPtyProvider, reattachMethod: string): void {
    if (!this.isBound(a)) return;
    if (r.providerSequence.generation === 'reset' && r.snapshot) {
      a.sink.notify(reattachMethod, {
        id: r.id,
        incarnationId: r.incarnationId,
        generation: 'reset',
        snapshot: r.snapshot,
      });
    }
    this.complete(a, r, provider);
  }

  /**
   * A catch-up attach failed: the connection is closed (4009) so its client reconnects and
   * resumes every terminal from its own seq, as after any drop; nothing is skipped silently.
   */
  resumeFailed(a: Attachment): void {
    if (!this.isBound(a)) return;
    this.dropSink(a.sink);
    a.sink.close?.(SLOW_CONSUMER_CLOSE_CODE, 'could not resume a lagging terminal; reconnect to resume');
  }

  /** Connections and attachments that lag now (for /metrics). */
  lagging(): { connections: number; attachments: number } {
    let connections = 0;
    let attachments = 0;
    for (const s of this.sinks.values()) {
      let any = false;
      for (const a of s.attachments.values()) {
        if (a.lagging) {
          attachments++;
          any = true;
        }
      }
      if (any) connections++;
    }
    return { connections, attachments };
  }

  private sinkState(sink: FanoutSink): SinkState {
    let s = this.sinks.get(sink);
    if (!s) {
      s = { sink, attachments: new Map() };
      this.sinks.set(sink, s);
    }
    return s;
  }

  private route(id: string, ev: FanoutEvent): void {
    for (const c of this.captures) {
      c.events.push({ id, ev });
      c.bytes += ev.kind === 'data' ? ev.e.data.length : 0;
      while (c.bytes > CAPTURE_MAX_BYTES && c.events.length > 1) {
        const old = c.events.shift()!.ev;
        c.bytes -= old.kind === 'data' ? old.e.data.length : 0;
      }
    }
    for (const a of this.byId.get(id) ?? []) {
      if (a.pending) a.pending.push(ev);
      else this.deliver(a, ev);
    }
  }

  private deliver(a: Attachment, ev: FanoutEvent): void {
    if (ev.kind === 'note') {
      if (ev.resetTo !== undefined) a.sentSeq = a.creditSeq = ev.resetTo;
      if (ev.skipTo !== undefined && ev.skipTo > a.sentSeq) {
        a.sentSeq = ev.skipTo;
        if (!a.manualAck) a.creditSeq = Math.max(a.creditSeq, ev.skipTo);
      }
      a.sink.notify(ev.method, ev.params);
      if (ev.skipTo !== undefined || ev.resetTo !== undefined)
        this.credit.report(a.id, a, a.creditSeq, a.lagging);
      return;
    }
    if (a.lagging) return;
    const e = ev.e;
    let { seq, data } = e;
    if (seq > a.sentSeq) {
      // A hole: never sent. The view catches up from the host's history at the seq it reached
      // (exact replay, or an explicit snapshot reset), as a lagging one does.
      this.holes++;
      this.onHole?.(a.id, a.sentSeq, seq);
      this.lag(a);
      return;
    }
    if (seq + data.length <= a.sentSeq) return;
    if (seq < a.sentSeq) {
      data = data.subarray(a.sentSeq - seq);
      seq = a.sentSeq;
    }
    if (a.sink.bufferedAmount > this.clientBufferBytes) {
      this.lag(a);
      return;
    }
    a.sink.sendBinary(encodeDataFrameParts(e.id, e.incarnationId, seq, data));
    a.sentSeq = seq + data.length;
    if (a.manualAck) return;
    a.creditSeq = a.sentSeq;
    this.credit.report(e.id, a, a.creditSeq);
  }

  /** Stops encoding output for `a` until its socket drained; its credit stops counting. */
  private lag(a: Attachment): void {
    a.lagging = true;
    this.credit.report(a.id, a, a.creditSeq, true);
    const s = this.sinkState(a.sink);
    s.drainTimer ??= setInterval(() => this.drain(s), DRAIN_POLL_MS);
  }

  /** Resumes the lagging attachments of a connection whose socket drained below a quarter of its bound. */
  private drain(s: SinkState): void {
    if (this.sinks.get(s.sink) !== s) {
      clearInterval(s.drainTimer);
      return;
    }
    if (s.sink.bufferedAmount > this.slowConsumerBytes) {
      this.dropSink(s.sink);
      s.sink.close?.(SLOW_CONSUMER_CLOSE_CODE, 'consumer too slow; reconnect to resume');
      return;
    }
    if (s.sink.bufferedAmount > this.clientBufferBytes / 4) return;
    clearInterval(s.drainTimer);
    s.drainTimer = undefined;
    for (const a of s.attachments.values()) {
      if (!a.lagging || a.pending) continue;
      a.lagging = false;
      if (!this.resume) {
        // Without a resumer (unit tests), the stream simply continues from the next chunk.
        this.credit.report(a.id, a, a.creditSeq);
        continue;
      }
      a.pending = [];
      this.resume(a);
    }
  }
}
