import { PtyRelayError } from '../../provider/errors.js';

/**
 * An attempt that heard nothing from its host for this long is stalled: a fresh one may race it.
 * Below the early ladder step (250 ms ±20 %), so every step during a blackhole starts a fresh
 * attempt; on a slow link this at worst runs a few handshakes side by side.
 */
export const ATTEMPT_STALL_MS = 180;

/** What one connection attempt of a race sees. */
export interface RaceAttempt {
  /** Aborts when the attempt lost, gave way to a fresh one, or the race was abandoned. */
  readonly signal: AbortSignal;
  /** Call whenever the host answered (bytes arrived): an attempt that makes progress is not raced. */
  progress(): void;
  /**
   * Makes this attempt the winner and aborts every other one. Call right before committing shared
   * state; throws ABORTED when another attempt won first or this one was aborted.
   */
  claim(): void;
}

export interface AttemptRaceOptions<T> {
  /** Attempts pending at once; 1 = one after the other, never abandoned for a fresh one. */
  maxConcurrent: number;
  /** The winner's result (once). */
  onWin: (value: T) => void;
  /** An attempt failed on its own (aborted attempts are not reported). */
  onFail: (err: Error) => void;
  /** Releases a result that arrived after the attempt was aborted. */
  discard: (value: T) => void;
  stallMs?: number;
  now?: () => number;
}

/** What a ladder step did: started an attempt, or must wait until `untilMs` / until a slot frees. */
export type StepResult = { kind: 'started' } | { kind: 'wait'; untilMs: number } | { kind: 'busy' };

interface Entry {
  readonly controller: AbortController;
  /** When the host last answered this attempt. */
  heardAt: number;
}

/**
 * Connection attempts to one host that may run side by side; the first to claim wins and every
 * other one is aborted. Pure: the caller supplies the attempt function and says when a ladder step
 * is due (`step`); the race decides whether that step starts a fresh attempt.
 */
export class AttemptRace<T> {
  /** Pending attempts, oldest first (aborted ones leave at once). */
  private readonly attempts: Entry[] = [];
  private winner: Entry | undefined;
  private abandoned = false;
  private readonly stallMs: number;
  private readonly now: () => number;

  constructor(
    private readonly run: (attempt: RaceAttempt) => Promise<T>,
    private readonly opts: AttemptRaceOptions<T>,
  ) {
    this.stallMs = opts.stallMs ?? ATTEMPT_STALL_MS;
    this.now = opts.now ?? Date.now;
  }

  get pending(): number {
    return this.attempts.length;
  }

  /**
   * A ladder step is due. Starts a fresh attempt unless a pending one heard from its host within
   * the stall time (`wait`) or one has claimed the race (`busy`). When every slot holds a stalled
   * attempt, the oldest gives way to the fresh one; with a single slot the step waits (`busy`).
   */
  step(): StepResult {
    if (this.abandoned || this.winner) return { kind: 'busy' };
    const heard = Math.max(-Infinity, ...this.attempts.map((a) => a.heardAt));
    if (heard + this.stallMs > this.now()) return { kind: 'wait', untilMs: heard + this.stallMs };
    if (this.attempts.length >= this.opts.maxConcurrent) {
      if (this.opts.maxConcurrent <= 1) return { kind: 'busy' };
      this.abort(this.attempts[0], 'a stalled attempt gave way to a fresh one');
    }
    this.start();
    return { kind: 'started' };
  }

  /** Ends the race: every pending attempt is aborted and nothing is reported any more. */
  abandon(): void {
    this.abandoned = true;
    for (const a of [...this.attempts]) this.abort(a, 'connecting was abandoned');
  }

  private start(): void {
    const entry: Entry = { controller: new AbortController(), heardAt: -Infinity };
    this.attempts.push(entry);
    const attempt: RaceAttempt = {
      signal: entry.controller.signal,
      progress: () => {
        entry.heardAt = this.now();
      },
      claim: () => {
        if (!this.claim(entry)) throw new PtyRelayError('ABORTED', 'another attempt won the race');
      },
    };
    let result: Promise<T>;
    try {
      result = this.run(attempt);
    } catch (err) {
      result = Promise.reject(err);
    }
    result.then(
      (value) => this.succeeded(entry, value),
      (err) => this.failed(entry, err),
    );
  }

  /** First claim wins: the others are aborted. An aborted attempt can no longer claim. */
  private claim(entry: Entry): boolean {
    if (this.abandoned || entry.controller.signal.aborted) return false;
    if (this.winner) return this.winner === entry;
    this.winner = entry;
    for (const other of [...this.attempts]) if (other !== entry) this.abort(other, 'another attempt won');
    return true;
  }

  /** An attempt that resolves without having claimed claims now. */
  private succeeded(entry: Entry, value: T): void {
    this.remove(entry);
    if (this.claim(entry)) this.opts.onWin(value);
    else this.opts.discard(value);
  }

  private failed(entry: Entry, err: unknown): void {
    this.remove(entry);
    // A winner that fails after claiming (e.g. its reattach failed) reopens the race.
    if (this.winner === entry) this.winner = undefined;
    if (entry.controller.signal.aborted || this.abandoned) return;
    this.opts.onFail(err instanceof Error ? err : new Error(String(err)));
  }

  private abort(entry: Entry, why: string): void {
    this.remove(entry);
    entry.controller.abort(new PtyRelayError('ABORTED', why));
  }

  private remove(entry: Entry): void {
    const i = this.attempts.indexOf(entry);
    if (i >= 0) this.attempts.splice(i, 1);
  }
}
