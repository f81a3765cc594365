/**
 * Retries 250 ms apart during the first ~5 s of an outage: with ±20 % jitter the attempt after a
 * link returns starts within 300 ms, so the session resumes within half a second.
 */
const EARLY_STEP_MS = 250;
const EARLY_STEPS = 20;

/**
 * Delays between reconnect attempts; the last step repeats. The first retry is immediate (a cut
 * connection usually comes back at once), then 250 ms apart for ~5 s, then it backs off. An
 * attempt against a host that is down is cheap (refused, or bounded by the 2 s reconnect
 * handshake limit).
 */
export const RECONNECT_STEPS_MS: readonly number[] = [
  0,
  250,
  ...Array<number>(EARLY_STEPS).fill(EARLY_STEP_MS),
  1000,
  2000,
  5000,
  10_000,
  30_000,
];
/** Delays between a client's reconnect attempts to the relay (RelayClient, the web page); ±20 % jitter. */
export const RELAY_RECONNECT_STEPS_MS: readonly number[] = [100, 250, 500, 1000, 2000, 5000];
/** ±20 % jitter so many relays do not hammer a recovering host in lockstep. */
export const RECONNECT_JITTER = 0.2;

export interface ReconnectLadderOptions {
  steps?: readonly number[];
  jitter?: number;
  /** Attempts before giving up; undefined = retry forever. */
  giveUpAfter?: number;
  random?: () => number;
}

/**
 * Pure schedule of reconnect attempts: which attempt comes next and after how long. The one
 * backoff of the codebase: the relay's host links (with {@link RECONNECT_STEPS_MS}), failed
 * deploys (DeployBackoff), and RelayClient's and the web page's links to the relay (with
 * {@link RELAY_RECONNECT_STEPS_MS}) all use it.
 */
export class ReconnectLadder {
  private attempt = 0;
  private connectedAt: number | undefined;
  private readonly steps: readonly number[];
  private readonly jitter: number;
  private readonly random: () => number;

  constructor(private readonly opts: ReconnectLadderOptions = {}) {
    this.steps = opts.steps ?? RECONNECT_STEPS_MS;
    this.jitter = opts.jitter ?? RECONNECT_JITTER;
    this.random = opts.random ?? Math.random;
  }

  /** The next attempt, or undefined when the give-up count is reached. */
  next(): { attempt: number; delayMs: number } | undefined {
    if (this.opts.giveUpAfter !== undefined && this.attempt >= this.opts.giveUpAfter) return undefined;
    const base = this.steps[Math.min(this.attempt, this.steps.length - 1)];
    this.attempt++;
    const factor = 1 + (this.random() * 2 - 1) * this.jitter;
    return { attempt: this.attempt, delayMs: Math.max(0, Math.round(base * factor)) };
  }

  connected(now: number): void {
    this.connectedAt = now;
  }

  /**
   * Call when the link drops. Every outage of a link that was up starts the ladder from the bottom:
   * an outage soon after the last one must not begin at the 30 s step (the early steps are cheap).
   */
  disconnected(_now: number): void {
    if (this.connectedAt !== undefined) this.attempt = 0;
    this.connectedAt = undefined;
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}
