import type { LinePosition } from './command-records.js';
import { IDLE_TAIL_BYTES } from './history-limits.js';
import { OutputRing } from './output-ring.js';
import type { SessionLog } from './session-log.js';

export interface OutputHistoryLimits {
  /** RAM ring without a log (history off or failed): what replays can reach. */
  ringBytes: number;
  /** RAM ring while every attached link has the session in the background (no log). */
  backgroundRingBytes: number;
  /** RAM tail while the log is healthy. */
  tailBytes: number;
  /** What the log keeps at most. */
  logBytes: number;
}

/** True when at least one link is attached and every one has the session in the background. */
export function allInBackground(attachedInBackground: readonly boolean[]): boolean {
  return attachedInBackground.length > 0 && attachedInBackground.every(Boolean);
}

/**
 * The ring a session needs without a log: the smaller background ring while every attached link
 * has it in the background and no link claims credit, else the full one. A link that dropped
 * without a goodbye keeps its claim (and is no longer attached): the ring must still hold what it
 * has not acknowledged, up to its window, which on a long fast path is more than the background ring.
 */
export function ringLimitFor(
  attachedInBackground: readonly boolean[],
  creditClaims: number,
  ringBytes: number,
  backgroundRingBytes: number,
): number {
  return allInBackground(attachedInBackground) && creditClaims === 0 ? backgroundRingBytes : ringBytes;
}

/**
 * A session's numbered output: a RAM ring (the tail: live delivery, short replays, agent sends)
 * and, while it is healthy, the session's log on disk, which holds everything up to its cap. With
 * a healthy log the ring is the small tail; without one (history off, disk full, read-only) the
 * ring alone is the history, at its classic size.
 */
export class OutputHistory {
  readonly ring: OutputRing;

  constructor(
    private readonly limits: OutputHistoryLimits,
    private log: SessionLog | undefined,
  ) {
    this.ring = new OutputRing(
      this.logging ? Math.min(limits.tailBytes, limits.ringBytes) : limits.ringBytes,
    );
  }

  /** True while the log holds the history (replays reach back to its start). */
  get logging(): boolean {
    return this.log?.healthy === true;
  }

  /** The log, while it is healthy. */
  get sessionLog(): SessionLog | undefined {
    return this.logging ? this.log : undefined;
  }

  get head(): number {
    return this.ring.head;
  }

  /** Oldest seq a replay can start at. */
  get start(): number {
    return this.logging ? Math.min((this.log as SessionLog).start, this.ring.start) : this.ring.start;
  }

  /** Bytes a replay can reach back at most: what bounds unacknowledged output (credit). */
  get replayCapacity(): number {
    return this.logging ? this.limits.logBytes : this.ring.capacity;
  }

  /** The line the next byte belongs to, by the log's line index; undefined without a healthy log. */
  linePosition(): LinePosition | undefined {
    if (!this.logging) return undefined;
    const { index } = (this.log as SessionLog).lines();
    return { line: index.lfCount, atLineStart: index.atLineStart };
  }

  /** True when every byte of `[from, head)` can be replayed. */
  has(from: number): boolean {
    return from >= this.start && from <= this.head;
  }

  append(data: Uint8Array): void {
    this.ring.append(data);
    if (this.log) this.log.append(data);
  }

  /** The bytes `[from, to)` from the ring or the log; `undefined` when no longer held. */
  async read(from: number, to: number = this.head): Promise<Buffer | undefined> {
    const inRing = this.ring.slice(from, to);
    if (inRing) return inRing;
    return this.logging ? (this.log as SessionLog).read(from, to) : undefined;
  }

  /**
   * The ring limit now: the tail while the log is healthy, the small idle tail while the session
   * is `idle` or every attached link has it in the background (those links keep their own thinned
   * tail, and bringing it back takes a snapshot); else the classic rule (the smaller background
   * ring while every attached link has the session in the background and no link claims credit,
   * else the full ring).
   */
  ringLimit(attachedInBackground: readonly boolean[], creditClaims: number, idle = false): number {
    if (this.logging) {
      const tail = Math.min(this.limits.tailBytes, this.limits.ringBytes);
      return idle || allInBackground(attachedInBackground) ? Math.min(IDLE_TAIL_BYTES, tail) : tail;
    }
    return ringLimitFor(
      attachedInBackground,
      creditClaims,
      this.limits.ringBytes,
      this.limits.backgroundRingBytes,
    );
  }

  /** The largest ring limit (a link is bringing the session back). */
  get widestRing(): number {
    return this.logging ? Math.min(this.limits.tailBytes, this.limits.ringBytes) : this.limits.ringBytes;
  }

  /** The session is gone. */
  detachLog(): SessionLog | undefined {
    const l = this.log;
    this.log = undefined;
    return l;
  }
}
