/** No bytes for this long AND a probe unanswered this long = dead link (Orca uses 20 s, VS Code 20 s). */
export const DEFAULT_DEAD_AFTER_MS = 15_000;
/** Send a probe after this much silence. */
export const DEFAULT_PROBE_IDLE_MS = 5_000;
/** A tick arriving this much later than scheduled means the machine slept. */
export const SLEEP_GAP_MS = 5_000;

export type HealthVerdict = 'ok' | 'probe' | 'dead';

export interface LinkHealthOptions {
  deadAfterMs?: number;
  probeIdleMs?: number;
  sleepGapMs?: number;
}

/**
 * Pure dead-link detector. The link is dead only when nothing arrived for T and the oldest
 * unanswered probe or request is older than T. A clock jump (laptop sleep) restarts both clocks,
 * so the verdict waits for a fresh probe instead of firing on stale timestamps.
 */
export class LinkHealth {
  readonly deadAfterMs: number;
  readonly probeIdleMs: number;
  private readonly sleepGapMs: number;
  private lastReceive: number;
  private oldestUnanswered: number | undefined;
  private lastTick: number;
  private probeOutstanding = false;

  constructor(now: number, opts: LinkHealthOptions = {}) {
    this.deadAfterMs = opts.deadAfterMs ?? DEFAULT_DEAD_AFTER_MS;
    this.probeIdleMs = opts.probeIdleMs ?? DEFAULT_PROBE_IDLE_MS;
    this.sleepGapMs = opts.sleepGapMs ?? SLEEP_GAP_MS;
    this.lastReceive = now;
    this.lastTick = now;
  }

  /** Any bytes from the peer. */
  received(now: number): void {
    this.lastReceive = now;
    this.oldestUnanswered = undefined;
    this.probeOutstanding = false;
  }

  /** A frame that expects an answer (request, input, probe) went out. */
  sent(now: number): void {
    this.oldestUnanswered ??= now;
  }

  /**
   * Call periodically (every ~1 s, expected interval `intervalMs`). Returns `probe` when a probe
   * should be sent now, `dead` once the link is judged dead.
   */
  tick(now: number, intervalMs: number): HealthVerdict {
    const late = now - this.lastTick - intervalMs;
    this.lastTick = now;
    if (late > this.sleepGapMs) {
      // Woke from sleep: old timestamps say nothing about the link now. Probe and wait.
      this.lastReceive = now;
      this.oldestUnanswered = now;
      this.probeOutstanding = true;
      return 'probe';
    }
    const silent = now - this.lastReceive;
    if (
      this.oldestUnanswered !== undefined &&
      silent >= this.deadAfterMs &&
      now - this.oldestUnanswered >= this.deadAfterMs
    ) {
      return 'dead';
    }
    if (silent >= this.probeIdleMs && !this.probeOutstanding) {
      this.probeOutstanding = true;
      this.oldestUnanswered ??= now;
      return 'probe';
    }
    return 'ok';
  }
}
