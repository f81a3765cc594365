import * as z from 'zod/mini';
import type {
  PtyBackgroundStreamEvent,
  PtyDataEvent,
  PtyExitEvent,
  PtyFactEvent,
  PtyReattachEvent,
  PtySpawnResult,
} from '../contract.js';
import { Emitter } from '../emitter.js';
import { type Frame, FrameType } from '../wire/frame-codec.js';
import { FrameDecoder } from '../wire/frame-decoder.js';
import { RelayNotification, type WireAttachResult } from './relay-protocol.js';

/** An event from the relay, as routed on the client. */
export type StreamEvent =
  | { kind: 'data'; e: PtyDataEvent }
  | { kind: 'fact'; e: PtyFactEvent }
  | { kind: 'exit'; e: PtyExitEvent }
  | { kind: 'background'; e: PtyBackgroundStreamEvent }
  | { kind: 'reattach'; e: PtyReattachEvent };

const streamEventHead = z.looseObject({ id: z.string(), incarnationId: z.optional(z.string()) });

const NOTIFICATION_KINDS: Record<string, StreamEvent['kind']> = {
  [RelayNotification.fact]: 'fact',
  [RelayNotification.exit]: 'exit',
  [RelayNotification.background]: 'background',
  [RelayNotification.reattach]: 'reattach',
};

/** What RelayClient remembers of a session it delivers, to resume it exactly. */
export interface StreamTrack {
  id: string;
  incarnationId: string;
  /** Seq of the next byte to deliver: everything before it was emitted. */
  seq: number;
  /** Seq the consumer acknowledged (manual flow control). */
  consumerSeq: number;
  exitDelivered: boolean;
}

/**
 * Delivery state of RelayClient: per-session seq and incarnation guards (duplicates and overlaps
 * are trimmed, stale incarnations dropped), and buffers for events that overtake a spawn/attach
 * reply (the relay sends the replay frame and early live frames before the JSON result).
 */
export class ClientStreams {
  readonly data = new Emitter<PtyDataEvent>();
  readonly exit = new Emitter<PtyExitEvent>();
  readonly fact = new Emitter<PtyFactEvent>();
  readonly background = new Emitter<PtyBackgroundStreamEvent>();
  readonly reattach = new Emitter<PtyReattachEvent>();
  /**
   * A chunk started past the next byte of its session: it is not delivered, and the session must
   * be re-attached from `seq` (exact replay or an explicit reset). Never a silent hole.
   */
  readonly hole = new Emitter<{ id: string; seq: number; got: number }>();
  /** A binary message that does not decode: its bytes are lost, so the link must be resumed. */
  readonly malformed = new Emitter<Error>();
  private readonly tracks = new Map<string, StreamTrack>();
  private readonly pendingById = new Map<string, Set<StreamEvent[]>>();
  private readonly spawnBuffers = new Set<StreamEvent[]>();

  get(id: string): StreamTrack | undefined {
    return this.tracks.get(id);
  }

  all(): StreamTrack[] {
    return [...this.tracks.values()];
  }

  forget(id: string): void {
    this.tracks.delete(id);
  }

  /** An event from the relay: held while a spawn/attach for its id is in flight, else delivered. */
  push(ev: StreamEvent): void {
    const id = ev.e.id;
    const bufs = this.pendingById.get(id);
    if (bufs) for (const b of bufs) b.push(ev);
    else if (this.spawnBuffers.size > 0 && !this.tracks.has(id))
      for (const b of this.spawnBuffers) b.push(ev);
    else this.apply(ev);
  }

  /** A `ptyrelay/*` notification carrying a session event (others are ignored). */
  pushNotification(method: string, params: Record<string, unknown>): void {
    const kind = NOTIFICATION_KINDS[method];
    // The relay relays these from the daemon, whose messages the relay checked by their schemas
    // (stub-client.ts parses fact/exit/bg with daemonMessageSchemas in stub-schemas.ts before
    // StubBackedProvider emits them); here only the routing fields are checked before passing on.
    if (kind && streamEventHead.safeParse(params).success) this.push({ kind, e: params } as StreamEvent);
  }

  /** A binary message from the relay: Data frames. */
  pushBinary(message: Buffer): void {
    let frames: Frame[];
    try {
      frames = new FrameDecoder().push(message);
    } catch (err) {
      this.malformed.emit(err as Error);
      return;
    }
    for (const f of frames) {
      if (f.type !== FrameType.Data) continue;
      this.push({ kind: 'data', e: { id: f.id, incarnationId: f.incarnationId, seq: f.seq, data: f.data } });
    }
  }

  /** Starts buffering events of `id` (attach in flight). */
  beginAttach(id: string): StreamEvent[] {
    const buf: StreamEvent[] = [];
    let set = this.pendingById.get(id);
    if (!set) {
      set = new Set();
      this.pendingById.set(id, set);
    }
    set.add(buf);
    return buf;
  }

  endAttach(id: string, buf: StreamEvent[]): void {
    const set = this.pendingById.get(id);
    set?.delete(buf);
    if (set?.size === 0) this.pendingById.delete(id);
  }

  /** Starts buffering events of ids nobody tracks yet (spawn in flight). */
  beginSpawn(): StreamEvent[] {
    const buf: StreamEvent[] = [];
    this.spawnBuffers.add(buf);
    return buf;
  }

  endSpawn(buf: StreamEvent[]): void {
    this.spawnBuffers.delete(buf);
  }

  /** The link dropped: requests in flight will be resent and bring fresh replays. */
  clearBuffers(): void {
    for (const set of this.pendingById.values()) for (const b of set) b.length = 0;
    for (const b of this.spawnBuffers) b.length = 0;
  }

  /**
   * A spawn/attach result the caller asked for: the view starts at `providerSequence.value`;
   * the replay bytes (which arrived as Data frames) go into the result, later ones to onData.
   */
  settleExplicit(w: WireAttachResult, buf: StreamEvent[]): PtySpawnResult {
    const { replayFromSeq, replayBytes, ...rest } = w;
    const value = w.providerSequence.value;
    const mine = buf.filter((ev) => ev.e.id === w.id);
    const replay = assemble(mine, w.incarnationId, replayFromSeq ?? value, value);
    const old = this.tracks.get(w.id);
    const sameInc = old?.incarnationId === w.incarnationId;
    this.tracks.set(w.id, {
      id: w.id,
      incarnationId: w.incarnationId,
      seq: value,
      consumerSeq: value,
      exitDelivered: (sameInc && old.exitDelivered) || w.exited !== undefined,
    });
    for (const ev of mine) this.apply(ev);
    const out: PtySpawnResult = { ...rest };
    if (replay.length > 0) out.replay = replay;
    return out;
  }

  /**
   * Result of an automatic re-attach after a reconnect: an exact replay continues the stream as
   * onData; a reset emits onReattach with the snapshot first, then the replay from its seq.
   */
  settleReattach(w: WireAttachResult, buf: StreamEvent[]): void {
    const t = this.tracks.get(w.id);
    if (!t || t.incarnationId !== w.incarnationId) return;
    if (w.sessionExpired) {
      // Lost with its host; the relay found its cold-restore record.
      this.tracks.delete(w.id);
      this.reattach.emit({
        id: w.id,
        incarnationId: w.incarnationId,
        generation: 'reset',
        sessionExpired: true,
        ...(w.coldRestore ? { coldRestore: w.coldRestore } : {}),
      });
      return;
    }
    if (w.providerSequence.generation === 'reset') {
      t.seq = w.replayFromSeq ?? w.providerSequence.value;
      t.consumerSeq = Math.min(t.consumerSeq, t.seq);
      this.reattach.emit({
        id: w.id,
        incarnationId: w.incarnationId,
        generation: 'reset',
        ...(w.snapshot ? { snapshot: w.snapshot } : {}),
      });
    }
    for (const ev of buf) if (ev.e.id === w.id) this.apply(ev);
    if (w.exited) this.apply({ kind: 'exit', e: { id: w.id, incarnationId: w.incarnationId, ...w.exited } });
  }

  /** The session is gone after a reconnect. */
  expire(id: string): void {
    const t = this.tracks.get(id);
    if (!t) return;
    this.tracks.delete(id);
    this.reattach.emit({ id, incarnationId: t.incarnationId, generation: 'reset', sessionExpired: true });
  }

  clear(): void {
    for (const e of [this.data, this.exit, this.fact, this.background, this.reattach]) e.clear();
    this.hole.clear();
    this.malformed.clear();
  }

  private apply(ev: StreamEvent): void {
    const t = this.tracks.get(ev.e.id);
    if (!t || t.incarnationId !== ev.e.incarnationId) return;
    switch (ev.kind) {
      case 'data': {
        const { seq, data } = ev.e;
        const end = seq + data.length;
        if (end <= t.seq) return;
        if (seq > t.seq) {
          this.hole.emit({ id: t.id, seq: t.seq, got: seq });
          return;
        }
        const skip = t.seq - seq;
        t.seq = end;
        this.data.emit(skip === 0 ? ev.e : { ...ev.e, seq: seq + skip, data: data.subarray(skip) });
        return;
      }
      case 'fact':
        this.fact.emit(ev.e);
        return;
      case 'background': {
        // A gap moves the delivered position past the dropped bytes; foregrounding restarts it at the snapshot.
        const b = ev.e;
        if (b.type === 'dataGap') t.seq = Math.max(t.seq, b.toSeq);
        else if (b.type === 'backgroundMarker' && !b.background) t.seq = b.seq;
        t.consumerSeq = Math.min(t.consumerSeq, t.seq);
        this.background.emit(b);
        return;
      }
      case 'exit':
        if (t.exitDelivered) return;
        t.exitDelivered = true;
        this.exit.emit(ev.e);
        return;
      case 'reattach':
        // The relay's own link to the host came back: forward resets and expiries.
        if (ev.e.sessionExpired) this.tracks.delete(t.id);
        else if (ev.e.snapshot) {
          t.seq = ev.e.snapshot.seq;
          t.consumerSeq = Math.min(t.consumerSeq, t.seq);
        }
        this.reattach.emit(ev.e);
        return;
    }
  }
}

/** The bytes `[from, to)` of one incarnation, stitched from buffered Data frames. */
function assemble(events: StreamEvent[], incarnationId: string, from: number, to: number): Uint8Array {
  const parts: Uint8Array[] = [];
  let next = from;
  for (const ev of events) {
    if (ev.kind !== 'data' || ev.e.incarnationId !== incarnationId || next >= to) continue;
    const { seq, data } = ev.e;
    if (seq > next || seq + data.length <= next) continue;
    const chunk = data.subarray(next - seq, Math.min(data.length, to - seq));
    parts.push(chunk);
    next += chunk.length;
  }
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}
