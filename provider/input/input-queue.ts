import type { PtyInputOrigin } from '../contract.js';
import { PtyRelayError } from '../errors.js';

/** Input held per session while the link is down (keystrokes and small pastes, not floods). */
export const MAX_QUEUED_INPUT_BYTES = 64 * 1024;
/**
 * Queued input older than this is discarded instead of sent: lines typed into a dead session are
 * not what the user means half a minute later (configurable: `input.maxQueueAgeMs`).
 */
export const DEFAULT_MAX_QUEUE_AGE_MS = 30_000;

/** One write waiting for its acknowledgement. */
export interface QueuedInput {
  seq: number;
  id: string;
  data: Uint8Array;
  /** Who wrote it (a client instance); `dropOwner` discards what it still has queued. */
  owner?: string;
  /** Where it came from end to end (the relay's queue to a daemon forwards it). */
  origin?: PtyInputOrigin;
  /** Sent before to a target that may have applied it and forgotten it (see `connected`). */
  resent?: boolean;
  /** When it was submitted (the queue's clock). */
  queuedAt: number;
  /** The target it was last sent to (undefined: never sent). */
  sentTo?: string;
  resolve: () => void;
  reject: (e: Error) => void;
}

export interface InputQueueOptions {
  /** Sends one frame to the current target; false when it could not be sent. */
  send(p: QueuedInput): boolean;
  /** Why the current target must not get this frame (it fails with that error), else undefined. */
  refuse?(p: QueuedInput): Error | undefined;
  maxQueuedBytes?: number;
  maxQueueAgeMs?: number;
  /** What "link down" means in error messages (`the link`, `the relay`). */
  peer?: string;
  now?: () => number;
}

/** Cumulative acknowledgement: everything with seq <= upTo is done; `failed` ones with their error. */
export interface InputAck {
  upTo: number;
  failed?: {
    inputSeq: number;
    error: { code: string; message: string; details?: Record<string, unknown> };
  }[];
}

/**
 * The one exactly-once input queue (RelayClient → relay, and relay → stub daemon). Every write
 * gets the next sequence number and stays pending until an acknowledgement covers it; after a
 * reconnect to the same target everything pending is resent with its number (the receiver drops
 * what it already applied). Frames sent to a target that has since forgotten them are resent
 * marked `resent` when the target de-duplicates end to end, else fail with LINK_CLOSED
 * (`maybeApplied`) rather than risk a second application. Input queued longer than
 * `maxQueueAgeMs`, or whose owner detached or went away, is discarded with INPUT_EXPIRED instead
 * of being sent late. Skipped numbers are fine: receivers treat a gap as done.
 */
export class InputQueue {
  private nextSeq = 1;
  private readonly pending: QueuedInput[] = [];
  private target: string | undefined;
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: InputQueueOptions) {
    this.maxBytes = opts.maxQueuedBytes ?? MAX_QUEUED_INPUT_BYTES;
    this.maxAgeMs = opts.maxQueueAgeMs ?? DEFAULT_MAX_QUEUE_AGE_MS;
    this.now = opts.now ?? Date.now;
  }

  get connectedTo(): string | undefined {
    return this.target;
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  submit(
    id: string,
    data: Uint8Array,
    tags: { owner?: string; origin?: PtyInputOrigin } = {},
  ): Promise<void> {
    if (this.target === undefined) {
      let queued = data.length;
      for (const p of this.pending) if (p.id === id && p.sentTo === undefined) queued += p.data.length;
      if (queued > this.maxBytes) {
        return Promise.reject(
          new PtyRelayError(
            'INPUT_QUEUE_FULL',
            `more than ${this.maxBytes} bytes of input queued for ${id} while ${this.opts.peer ?? 'the link'} is down`,
          ),
        );
      }
    }
    const seq = this.nextSeq++;
    return new Promise((resolve, reject) => {
      const p: QueuedInput = { seq, id, data, queuedAt: this.now(), resolve, reject };
      if (tags.owner !== undefined) p.owner = tags.owner;
      if (tags.origin !== undefined) p.origin = tags.origin;
      this.pending.push(p);
      if (this.target !== undefined) this.send(p, this.target);
      else this.armExpiry();
    });
  }

  /**
   * The link is up again, to `target`: discard what has grown too old, then resend the rest in
   * order. `forgotten`: the target has no record of earlier frames. Frames sent to a target that
   * forgot them (or to another target) are resent marked `resent` when the target de-duplicates
   * end to end (`endToEnd`: it forwards each frame's origin to where it is applied), else they
   * fail with LINK_CLOSED (`maybeApplied`).
   */
  connected(target: string, forgotten = false, endToEnd = false): void {
    this.target = target;
    clearTimeout(this.expiryTimer);
    this.expire();
    for (let i = 0; i < this.pending.length; ) {
      const p = this.pending[i]!;
      if (p.sentTo !== undefined && (forgotten || p.sentTo !== target) && endToEnd) p.resent = true;
      else if (p.sentTo !== undefined && (forgotten || p.sentTo !== target)) {
        this.pending.splice(i, 1);
        p.reject(
          new PtyRelayError(
            'LINK_CLOSED',
            `${this.opts.peer ?? 'the link'} lost track of this input while it was in flight`,
            {
              maybeApplied: true,
            },
          ),
        );
        continue;
      }
      if (this.send(p, target)) i++;
    }
  }

  disconnected(): void {
    this.target = undefined;
    this.armExpiry();
  }

  onAck(m: InputAck): void {
    const failed = new Map((m.failed ?? []).map((f) => [f.inputSeq, f.error]));
    while (this.pending.length > 0 && this.pending[0]!.seq <= m.upTo) {
      const p = this.pending.shift()!;
      const err = failed.get(p.seq);
      if (err) p.reject(PtyRelayError.from(err as never));
      else p.resolve();
    }
  }

  /**
   * Discards input not yet sent — of `owner` (else anyone's), for terminal `id` (else all): its
   * sender detached or went away. Returns the bytes discarded.
   */
  dropQueued(which: { owner?: string; id?: string }, reason: 'detached' | 'gone' = 'detached'): number {
    return this.discard(
      (p) =>
        p.sentTo === undefined &&
        (which.owner === undefined || p.owner === which.owner) &&
        (which.id === undefined || p.id === which.id),
      reason,
    );
  }

  /** Fails every pending write (the link is given up for good, or disposed). */
  failAll(err: Error): void {
    clearTimeout(this.expiryTimer);
    for (const p of this.pending.splice(0)) p.reject(err);
  }

  /** Sends `p` to `target` (it stays pending); false when it was refused and failed instead. */
  private send(p: QueuedInput, target: string): boolean {
    const refused = this.opts.refuse?.(p);
    if (refused) {
      this.pending.splice(this.pending.indexOf(p), 1);
      p.reject(refused);
      return false;
    }
    if (this.opts.send(p)) p.sentTo = target;
    return true;
  }

  /** Rejects pending input older than the limit (sent or not: it is not sent again). */
  private expire(): void {
    const cutoff = this.now() - this.maxAgeMs;
    this.discard((p) => p.queuedAt <= cutoff, 'age');
  }

  private discard(which: (p: QueuedInput) => boolean, reason: 'age' | 'detached' | 'gone'): number {
    let bytes = 0;
    for (let i = 0; i < this.pending.length; ) {
      const p = this.pending[i]!;
      if (!which(p)) {
        i++;
        continue;
      }
      this.pending.splice(i, 1);
      bytes += p.data.length;
      const why =
        reason === 'age'
          ? `it waited longer than ${this.maxAgeMs} ms while ${this.opts.peer ?? 'the link'} was down`
          : reason === 'detached'
            ? 'its sender detached'
            : 'its sender went away';
      p.reject(
        new PtyRelayError(
          'INPUT_EXPIRED',
          `${p.data.length} bytes of input for ${p.id} were not sent: ${why}`,
          {
            bytes: p.data.length,
            reason,
            ...(p.sentTo !== undefined ? { maybeApplied: true } : {}),
          },
        ),
      );
    }
    return bytes;
  }

  /** While disconnected, a timer discards input as it ages, so its sender hears about it then. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    if (this.target !== undefined || this.pending.length === 0) return;
    const oldest = Math.min(...this.pending.map((p) => p.queuedAt));
    const inMs = Math.max(0, oldest + this.maxAgeMs - this.now()) + 1;
    this.expiryTimer = setTimeout(() => {
      this.expire();
      this.armExpiry();
    }, inMs);
    // Node: never keep the process alive for this (browsers have no unref).
    (this.expiryTimer as { unref?: () => void }).unref?.();
  }
}
