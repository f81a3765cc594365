import type { Socket } from 'node:net';
import { monotonicMs } from '../../provider/monotonic-ms.js';
import { dataFrameIds, encodeDataFrameHeadFrom } from '../../provider/wire/frame-codec.js';
import type { PtySession } from '../session/pty-session.js';
import { OutputBatcher } from './output-batcher.js';

/** Socket output buffered beyond this pauses the sessions feeding this connection. */
export const SOCKET_HIGH_WATER = 4 * 1024 * 1024;
/**
 * A control frame the connection owes (an input acknowledgement) waits at most this long for
 * output to ride with. An echo comes back well within it, and one write then carries both: one
 * packet on every hop instead of two, the second of which can wait for a delayed ACK behind Nagle.
 */
export const CONTROL_HOLD_MS = 5;

export interface OutputHooks {
  /** The backlog passed the high water (or the daemon-wide cap): pause the sessions feeding us. */
  blocked(): void;
  unblocked(): void;
  /** All connections of the daemon together buffer more than the daemon's cap. */
  overCap(): boolean;
}

/**
 * Everything one daemon connection writes, and when: frames produced in one turn of the event
 * loop go to the socket as one write at the end of that turn (one writev, one packet downstream);
 * live output is merged by the {@link OutputBatcher} while earlier writes still wait for the
 * kernel; a control frame the connection owes rides with the next output.
 */
export class ConnectionOutput {
  readonly batcher: OutputBatcher;
  /** Writes handed to the socket: one per turn that had anything to send. */
  writes = 0;
  private parts: Uint8Array[] = [];
  private turnArmed = false;
  /** Writes not yet taken by the kernel (their callback has not run). */
  private inFlight = 0;
  private dataThisTurn = false;
  private owed: (() => Uint8Array) | undefined;
  private holdTimer: NodeJS.Timeout | undefined;
  private blocked = false;
  private closed = false;
  /** Each session's id and incarnation as Data frames carry them, encoded once per incarnation. */
  private readonly frameIds = new WeakMap<PtySession, { incarnationId: string; bytes: Buffer }>();

  constructor(
    private readonly socket: Socket,
    private readonly hooks: OutputHooks,
    /** Milliseconds, monotonic (tests pass a fake clock). */
    clock: () => number = monotonicMs,
  ) {
    const send = (s: PtySession, seq: number, chunks: readonly Uint8Array[], bytes: number) =>
      this.dataFrame(s, seq, chunks, bytes);
    this.batcher = new OutputBatcher(send, () => this.armTurn(), clock);
    socket.on('drain', () => this.unblock());
  }

  /** Bytes written to the socket and not yet taken by the kernel. */
  get buffered(): number {
    return this.socket.writableLength;
  }

  get isBlocked(): boolean {
    return this.blocked;
  }

  /** A JSON frame: pending output goes first, so stream order is kept. */
  frame(buf: Uint8Array): void {
    if (this.closed) return;
    this.batcher.flush();
    this.put(buf);
  }

  /** Live output of `s`. */
  data(s: PtySession, seq: number, data: Uint8Array): void {
    if (!this.closed) this.batcher.push(s, seq, data);
  }

  /** Output that is not batched (background keep-tail, replays), after anything pending. */
  dataNow(s: PtySession, seq: number, data: Uint8Array): void {
    if (this.closed) return;
    this.batcher.flush();
    this.dataFrame(s, seq, [data], data.length);
  }

  /**
   * A control frame to send with the next output, or alone after {@link CONTROL_HOLD_MS}.
   * `build` runs when it goes out, so it carries the latest state.
   */
  owe(build: () => Uint8Array): void {
    if (this.closed) return;
    this.owed = build;
    this.holdTimer ??= setTimeout(() => {
      this.holdTimer = undefined;
      this.payOwed();
      this.armTurn();
    }, CONTROL_HOLD_MS);
  }

  /** Writes everything now (before the socket is ended or destroyed on purpose). */
  flushNow(): void {
    if (this.closed || this.socket.destroyed) return;
    this.batcher.flush();
    this.payOwed();
    this.endTurn();
  }

  close(): void {
    this.flushNow();
    this.closed = true;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    this.batcher.dispose();
    this.parts = [];
    this.owed = undefined;
  }

  private dataFrame(s: PtySession, seq: number, chunks: readonly Uint8Array[], bytes: number): void {
    this.dataThisTurn = true;
    let ids = this.frameIds.get(s);
    if (ids?.incarnationId !== s.incarnationId) {
      ids = { incarnationId: s.incarnationId, bytes: dataFrameIds(s.id, s.incarnationId) };
      this.frameIds.set(s, ids);
    }
    this.parts.push(encodeDataFrameHeadFrom(ids.bytes, seq, bytes));
    for (const c of chunks) this.parts.push(c);
    this.armTurn();
  }

  private put(buf: Uint8Array): void {
    this.parts.push(buf);
    this.armTurn();
  }

  private payOwed(): void {
    const build = this.owed;
    if (!build) return;
    this.owed = undefined;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    this.parts.push(build());
  }

  private armTurn(): void {
    if (this.turnArmed || this.closed) return;
    this.turnArmed = true;
    setImmediate(this.endTurn);
  }

  private readonly endTurn = (): void => {
    if (this.closed) {
      this.turnArmed = false;
      return;
    }
    // Still armed while the batcher sends: its frames join this turn's write.
    try {
      this.batcher.turnEnded(this.inFlight > 0);
    } finally {
      this.turnArmed = false;
    }
    if (this.dataThisTurn) this.payOwed();
    this.dataThisTurn = false;
    const parts = this.parts;
    if (parts.length === 0) return;
    this.parts = [];
    this.inFlight++;
    this.writes++;
    this.socket.cork();
    for (let i = 0; i < parts.length - 1; i++) this.socket.write(parts[i]!);
    this.socket.write(parts[parts.length - 1]!, this.written);
    this.socket.uncork();
    if (!this.blocked && (this.socket.writableLength > SOCKET_HIGH_WATER || this.hooks.overCap())) {
      this.blocked = true;
      this.hooks.blocked();
    }
  };

  private readonly written = (): void => {
    this.inFlight--;
    if (this.inFlight === 0 && this.batcher.hasPending) {
      this.batcher.drained();
      this.armTurn();
    }
  };

  private unblock(): void {
    if (!this.blocked) return;
    this.blocked = false;
    this.hooks.unblocked();
  }
}
