/**
 * Event delivery from stub links to StubBackedProvider's listeners: subscribes to each new
 * link's frames, maps local ids to global ones, drops what belongs to an old incarnation or was
 * already delivered (SessionTracker), and emits data, facts, exits (once), background stream
 * events and re-attaches. Spawn/attach replies are handled as they are decoded, before the data
 * behind them; after a reconnect the replay of a re-attach is emitted as data. Delivered bytes
 * are credited back to the daemon through one AckScheduler (at once, or as the consumer acks
 * with manual flow control).
 */
import type {
  PtyBackgroundStreamEvent,
  PtyDataEvent,
  PtyExitEvent,
  PtyFactEvent,
  PtyReattachEvent,
} from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { AckScheduler } from '../../provider/flow/ack-scheduler.js';
import type { StubAttachResult } from '../../provider/wire/messages.js';
import { reattachSessions } from './reattach-sessions.js';
import { type SessionTrack, SessionTracker } from './session-tracker.js';
import type { StubClient } from './stub-client.js';

export interface StubEventFanoutDeps {
  /** The global id of a daemon's (link key's) local id. */
  globalId(host: string, localId: string): string;
  /** The link of `host` if it is connected now. */
  connectedClient(host: string): StubClient | undefined;
  /** Whether the consumer acks data itself (LinkPolicy.manualAck); read at each delivery. */
  manualAck(): boolean | undefined;
}

export class StubEventFanout {
  readonly data = new Emitter<PtyDataEvent>();
  readonly exit = new Emitter<PtyExitEvent>();
  readonly fact = new Emitter<PtyFactEvent>();
  readonly background = new Emitter<PtyBackgroundStreamEvent>();
  readonly reattach = new Emitter<PtyReattachEvent>();
  /** Delivery state per global id: incarnation guard, seq, exit-once. */
  private readonly tracker = new SessionTracker();
  /** Local ids whose attach is a reattach after a reconnect (their replay is emitted as data). */
  private readonly reattaching = new Set<string>();
  private readonly acks: AckScheduler;

  constructor(private readonly deps: StubEventFanoutDeps) {
    this.acks = new AckScheduler((id, seq) => {
      const t = this.tracker.get(id);
      const client = t && deps.connectedClient(t.host);
      if (!t || !client) return false;
      client.ack(t.localId, seq);
      return true;
    });
  }

  /** Re-attaches every session delivered on `host`, from the last delivered seq. */
  reattachHost(host: string, client: StubClient): Promise<void> {
    return reattachSessions(client, this.tracker.ofHost(host), this.reattaching, (t) => this.expire(t));
  }

  /** The daemon behind link `host` was stopped: every session delivered through it is gone. */
  expireHost(host: string): void {
    for (const t of this.tracker.ofHost(host)) this.expire(t);
  }

  private expire(t: SessionTrack): void {
    this.tracker.delete(t.id);
    this.reattach.emit({
      id: t.id,
      incarnationId: t.incarnationId,
      generation: 'reset',
      sessionExpired: true,
    });
  }

  /** Runs synchronously as a spawn/attach reply is decoded, before the data frames behind it. */
  private onAttachReply(host: string, r: StubAttachResult, blob: Uint8Array | undefined): void {
    const id = this.deps.globalId(host, r.id);
    const reattach = this.reattaching.has(r.id);
    if (r.sessionExpired) {
      // A terminal lost with its host: nothing live to track; a reattach reports it with its record.
      this.tracker.delete(id);
      if (reattach) {
        this.reattach.emit({
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
    const before = this.tracker.get(id);
    const consumedBefore = before?.incarnationId === r.incarnationId ? before.consumerSeq : 0;
    const t = this.tracker.set(id, host, r.id, r.incarnationId, reattach ? from : r.seq);
    if (!reattach) {
      // The caller gets the replay in the result: it counts as consumed. An attach that catches up
      // from the history restarts the stream below what consumers already took: that credit stays
      // (the daemon registered the link afresh at the reply's seq, so it is sent again at once).
      t.consumerSeq = Math.max(consumedBefore, r.seq);
      this.acks.rebase(id);
      this.queueAck(id, t.consumerSeq);
      return;
    }
    if (r.generation === 'reset') {
      this.reattach.emit({
        id,
        incarnationId: r.incarnationId,
        generation: 'reset',
        snapshot: r.snapshot,
      });
    }
    if (blob && blob.length > 0) this.deliver(id, r.incarnationId, from, blob);
    t.seq = r.seq;
    if (r.exited && this.tracker.markExit(id, r.incarnationId)) {
      this.exit.emit({ id, incarnationId: r.incarnationId, ...r.exited });
    }
  }

  /** Emits the unseen part of a chunk and, without manual flow control, credits it at once. */
  private deliver(id: string, incarnationId: string, seq: number, data: Uint8Array): void {
    const d = this.tracker.accept(id, incarnationId, seq, data);
    if (!d) return;
    this.data.emit({ id, incarnationId, seq: d.seq, data: d.data });
    if (!this.deps.manualAck()) this.queueAck(id, d.seq + d.data.length);
  }

  private queueAck(id: string, seq: number): void {
    this.acks.queue(id, seq);
  }

  /** Subscribes to a new link's events. */
  wire(host: string, client: StubClient): void {
    const globalId = (localId: string) => this.deps.globalId(host, localId);
    client.beforeWrite = () => this.acks.rideWith((id) => this.tracker.get(id)?.host === host);
    client.attached.on(({ result, blob }) => this.onAttachReply(host, result, blob));
    client.data.on((e) => this.deliver(globalId(e.id), e.incarnationId, e.seq, e.data));
    client.fact.on((e) => {
      const id = globalId(e.id);
      if (!this.tracker.isCurrent(id, e.incarnationId)) return;
      this.fact.emit({ id, incarnationId: e.incarnationId, seq: e.seq, fact: e.fact });
    });
    client.background.on((m) => {
      const id = globalId(m.id);
      const t = this.tracker.get(id);
      if (!t || t.incarnationId !== m.incarnationId) return;
      const ev = m.event;
      // A gap moves the delivered position past the dropped bytes; foregrounding restarts it at the snapshot.
      if (ev.type === 'dataGap') t.seq = Math.max(t.seq, ev.toSeq);
      else if (ev.type === 'backgroundMarker' && !ev.background) t.seq = ev.seq;
      this.background.emit({ id, incarnationId: m.incarnationId, ...ev } as PtyBackgroundStreamEvent);
    });
    client.exit.on((e) => {
      const id = globalId(e.id);
      if (!this.tracker.markExit(id, e.incarnationId)) return;
      this.exit.emit({
        id,
        incarnationId: e.incarnationId,
        exitCode: e.exitCode,
        ...(e.signal ? { signal: e.signal } : {}),
      });
    });
  }

  /** The consumer took `bytes` more of global id `id` (manual flow control): credit them. */
  consumed(id: string, bytes: number): void {
    const t = this.tracker.get(id);
    if (!t) return;
    t.consumerSeq = Math.max(t.consumerSeq, Math.min(t.consumerSeq + bytes, t.seq));
    this.queueAck(t.id, t.consumerSeq);
  }

  /**
   * The consumers took everything of this incarnation before `seq` (manual flow control, by
   * position): monotonic, and not bounded by what this link delivered since its last attach (a
   * catch-up redelivers bytes other consumers had already taken). The daemon bounds it by its head.
   */
  consumedTo(id: string, incarnationId: string, seq: number): void {
    const t = this.tracker.get(id);
    if (!t || t.incarnationId !== incarnationId || seq <= t.consumerSeq) return;
    t.consumerSeq = seq;
    this.queueAck(t.id, seq);
  }

  /** A session that ended: its delivery state and pending ack go. */
  forget(id: string): void {
    this.tracker.delete(id);
    this.acks.forget(id);
  }

  /** Stops the ack timers (first step of disposing the provider). */
  disposeAcks(): void {
    this.acks.dispose();
  }

  /** Drops every listener (last step of disposing the provider). */
  clear(): void {
    for (const e of [this.data, this.exit, this.fact, this.background, this.reattach]) e.clear();
  }
}
