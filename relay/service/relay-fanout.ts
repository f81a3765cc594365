import type { WireAttachResult } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, PtyDataEvent, PtySpawnResult } from '../../provider/contract.js';
import { encodeDataFrameParts } from '../../provider/wire/frame-codec.js';

/**
 * The relay's half of RelayClient's output stream (used by relay/service/pty-extension.ts; it
 * lives here, next to the client half, because both must agree on its rules): which connection
 * is attached to which terminal, the replay-then-live hand-over of an attach, and credit toward
 * the provider with socket backpressure. Transport-agnostic: a connection is a {@link FanoutSink}.
 */

/** Above this many bytes queued in a socket, the relay stops crediting that connection's data. */
export const BACKPRESSURE_HIGH_BYTES = 4 * 1024 * 1024;
/** …and credits again once the socket drained below this. */
const BACKPRESSURE_LOW_BYTES = 1024 * 1024;
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
 * A connection that still has this much queued is closed instead of being sent more: while the
 * provider acknowledges on delivery (the default router), withheld credit cannot pause the PTY,
 * so this bounds the relay's memory; the client resumes exactly from its last seq.
 */
export const SLOW_CONSUMER_CLOSE_BYTES = 64 * 1024 * 1024;
/** WebSocket close code for a connection dropped because it fell too far behind. */
export const SLOW_CONSUMER_CLOSE_CODE = 4009;

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
  congested: boolean;
  drainTimer?: NodeJS.Timeout;
}

/** Credit bookkeeping per terminal: how far the provider was acknowledged, how far it delivered. */
interface Flow {
  provider: IPtyProvider;
  incarnationId: string;
  acked: number;
  head: number;
}

/**
 * Routes provider events to attached connections and acknowledges to the provider the minimum
 * every attached connection consumed: automatically on send while the socket is below
 * {@link BACKPRESSURE_HIGH_BYTES}, or by the client's own acks (`manualAck`). A terminal nobody is
 * attached to runs free (everything it delivers is credited), so an unwatched PTY never blocks.
 */
export class RelayFanout {
  /** @param slowConsumerBytes queued bytes at which a connection is closed (config `flowControl.relayPendingCap`). */
  constructor(private readonly slowConsumerBytes = SLOW_CONSUMER_CLOSE_BYTES) {}

  private readonly sinks = new Map<FanoutSink, SinkState>();
  private readonly byId = new Map<string, Set<Attachment>>();
  private readonly flows = new Map<string, Flow>();
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
    const old = this.flows.get(r.id);
    const same = old?.incarnationId === r.incarnationId;
    this.flows.set(r.id, {
      provider,
      incarnationId: r.incarnationId,
      // The provider counts an attach result as consumed.
      acked: same ? Math.max(old.acked, value) : value,
      head: same ? Math.max(old.head, value) : value,
    });
    const pending = a.pending ?? [];
    a.pending = undefined;
    for (const ev of pending) {
      if (ev.kind === 'data' && ev.e.incarnationId !== r.incarnationId) continue;
      this.deliver(a, ev);
    }
    this.credit(r.id);
    return replay && replay.length > 0 ? { ...rest, replayFromSeq: from, replayBytes: replay.length } : rest;
  }

  /** A provider's output event. */
  data(e: PtyDataEvent): void {
    const f = this.flows.get(e.id);
    if (f && f.incarnationId === e.incarnationId) f.head = Math.max(f.head, e.seq + e.data.length);
    this.route(e.id, { kind: 'data', e });
    if (f && !this.byId.has(e.id)) this.credit(e.id);
  }

  /**
   * A notification for the connections attached to `id`. `resetTo`/`skipTo` move the stream
   * position of every view when the notification reaches it (in stream order).
   */
  note(id: string, method: string, params: unknown, seq: { resetTo?: number; skipTo?: number } = {}): void {
    const f = this.flows.get(id);
    if (f && seq.resetTo !== undefined) f.acked = f.head = seq.resetTo;
    if (f && seq.skipTo !== undefined) f.head = Math.max(f.head, seq.skipTo);
    this.route(id, { kind: 'note', method, params, ...seq });
  }

  /** The client's credit ack (`ptyrelay/ack`): switches the attachment to manual flow control. */
  ack(sink: FanoutSink, id: string, seq: number): void {
    const a = this.attachment(sink, id);
    if (!a) return;
    a.manualAck = true;
    a.creditSeq = Math.max(a.creditSeq, Math.min(seq, a.sentSeq));
    if (!a.pending) this.credit(id);
  }

  detach(a: Attachment): void {
    const s = this.sinks.get(a.sink);
    if (s?.attachments.get(a.id) === a) s.attachments.delete(a.id);
    const set = this.byId.get(a.id);
    set?.delete(a);
    if (set?.size === 0) this.byId.delete(a.id);
    this.credit(a.id);
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
    this.flows.delete(id);
  }

  private sinkState(sink: FanoutSink): SinkState {
    let s = this.sinks.get(sink);
    if (!s) {
      s = { sink, attachments: new Map(), congested: false };
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
      if (ev.skipTo !== undefined) this.credit(a.id);
      return;
    }
    const e = ev.e;
    let { seq, data } = e;
    if (seq + data.length <= a.sentSeq) return;
    if (seq < a.sentSeq) {
      data = data.subarray(a.sentSeq - seq);
      seq = a.sentSeq;
    }
    if (a.sink.bufferedAmount > this.slowConsumerBytes) {
      this.dropSink(a.sink);
      a.sink.close?.(SLOW_CONSUMER_CLOSE_CODE, 'consumer too slow; reconnect to resume');
      return;
    }
    a.sink.sendBinary(encodeDataFrameParts(e.id, e.incarnationId, seq, data));
    a.sentSeq = seq + data.length;
    if (a.manualAck) return;
    const s = this.sinkState(a.sink);
    if (!s.congested && a.sink.bufferedAmount <= BACKPRESSURE_HIGH_BYTES) {
      a.creditSeq = a.sentSeq;
      this.credit(e.id);
    } else this.startDrain(s);
  }

  /** Acknowledges to the provider what every attached connection consumed (all of it when none is). */
  private credit(id: string): void {
    const f = this.flows.get(id);
    if (!f) return;
    let target = f.head;
    for (const a of this.byId.get(id) ?? []) if (!a.pending) target = Math.min(target, a.creditSeq);
    if (target > f.acked) {
      f.provider.acknowledgeDataEvent(id, target - f.acked);
      f.acked = target;
    }
  }

  /** Withholds credit from a congested socket until it drained. */
  private startDrain(s: SinkState): void {
    s.congested = true;
    s.drainTimer ??= setInterval(() => {
      if (this.sinks.get(s.sink) === s && s.sink.bufferedAmount > BACKPRESSURE_LOW_BYTES) return;
      clearInterval(s.drainTimer);
      s.drainTimer = undefined;
      s.congested = false;
      for (const a of s.attachments.values()) {
        if (a.manualAck || a.pending) continue;
        a.creditSeq = a.sentSeq;
        this.credit(a.id);
      }
    }, DRAIN_POLL_MS);
  }
}
