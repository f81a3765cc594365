import type { OutputHistory } from '../history/output-history.js';
import { collectGarbageSoon } from './idle-gc.js';
import type { ToModel } from './model-protocol.js';
import { ModelEvents } from './model-rebuild-plan.js';

/**
 * A session is idle after this long without output, input, snapshot or read: its model's
 * scrollback is dropped (the log holds the bytes) and rebuilt from the log when it is next read.
 * Long enough that a session someone is working in never pays for a rebuild between two reads.
 */
export const DEFAULT_SCROLLBACK_IDLE_MS = 30_000;
/**
 * Quiet that makes a session every link has in the background idle (when shorter than the idle
 * time): nobody looks at it, and its next foreground pays a rebuild anyway. A session that keeps
 * writing keeps its scrollback: a rebuild would chase its output.
 */
export const BACKGROUND_IDLE_MS = 5000;
/**
 * A rebuild that would have the worker parse more than this (escape-heavy output the feeder
 * cannot skip) is given up: the model keeps its screen and rows from then on, and the snapshot
 * holds no older rows, rather than a snapshot waiting seconds for a re-parse.
 */
export const REBUILD_MAX_PARSE_BYTES = 16 * 1024 * 1024;
/** Catching up with output that arrived while the log was read: give up after this many rounds. */
const GROW_ROUNDS = 8;
/** The log is read back in pieces of this size (the planner keeps what matters of each). */
const READ_PIECE_BYTES = 1024 * 1024;

export interface ScrollbackHost {
  readonly sid: string;
  readonly history: OutputHistory;
  post(m: ToModel): void;
  /** Hands the model everything it has not been given yet. */
  flushModel(): void;
  /** The feeder may skip more line output while the scrollback is dropped. */
  retainLines(shrunk: boolean): void;
}

/**
 * When a session's screen model keeps its scrollback. The model of a session that has been idle
 * for `idleMs` (no output, input, snapshot or read), or quiet for BACKGROUND_IDLE_MS while every
 * attached link has it in the background, drops its scrollback (the
 * costly part of a model: ~1.5 MB per session after 10 MiB of output, measured); the next snapshot or read (a link
 * foregrounds it, attaches, resets; an agent reads; a cold-restore record) first rebuilds it from
 * the session's log, so what it returns is what a model that never shrank would return. Only a
 * session with a healthy log shrinks. `idleMs` 0: never.
 */
export class ModelScrollback {
  private shrunk = false;
  /** The model restarted empty (the worker was lost): the next rebuild is adopted whatever it shows. */
  private restarted = false;
  private lastUse = Date.now();
  private growing: Promise<void> | undefined;
  readonly events: ModelEvents;
  /** Rebuilds so far, and those whose screen differed from the live one (the live one was kept). */
  rebuilds = 0;
  rebuildsRejected = 0;

  constructor(
    private readonly host: ScrollbackHost,
    cols: number,
    rows: number,
    private readonly idleMs: number,
    private readonly retainedLines: () => number,
  ) {
    this.events = new ModelEvents(cols, rows);
  }

  get isShrunk(): boolean {
    return this.shrunk;
  }

  /** The worker finished a rebuild. */
  rebuilt(adopted: boolean): void {
    this.rebuilds++;
    if (!adopted) this.rebuildsRejected++;
  }

  /**
   * Dropped its scrollback and unused since for as long as that took: the session may keep only
   * the small idle tail of its output in RAM (its log has the rest).
   */
  idle(now: number, inBackground: boolean): boolean {
    if (!this.shrunk || this.growing) return false;
    return now - this.lastUse >= this.idleAfter(inBackground);
  }

  /** Quiet after which the session counts as idle. */
  private idleAfter(inBackground: boolean): number {
    return inBackground ? Math.min(this.idleMs, BACKGROUND_IDLE_MS) : this.idleMs;
  }

  /** Output, input or a resize: the session is in use. */
  used(now = Date.now()): void {
    this.lastUse = now;
  }

  /** Shrinks the model when the session is idle or in the background everywhere; true when it did. */
  sweep(now: number, inBackground: boolean): boolean {
    if (this.shrunk || this.growing || this.idleMs === 0) return false;
    if (!this.host.history.logging || this.host.history.head === 0) return false;
    if (now - this.lastUse < this.idleAfter(inBackground)) return false;
    this.host.flushModel();
    this.host.post({ kind: 'shrink', sid: this.host.sid });
    this.host.retainLines(true);
    this.shrunk = true;
    return true;
  }

  /**
   * The model worker was lost and the session's model restarted empty in a new one: it is rebuilt
   * from the log now, the way a shrunk model grows, and the rebuild replaces it whatever its
   * screen. Without a log (its disk failed) the model keeps only what comes from now on.
   */
  restart(): Promise<void> {
    if (!this.host.history.logging) return Promise.resolve();
    this.shrunk = true;
    this.restarted = true;
    return this.full();
  }

  /** Before a snapshot or read: the model has its scrollback back (rebuilt from the log). */
  full(): Promise<void> {
    this.lastUse = Date.now();
    if (!this.shrunk) return Promise.resolve();
    this.growing ??= this.grow().finally(() => {
      this.growing = undefined;
    });
    return this.growing;
  }

  private grow(): Promise<void> {
    // One rebuild at a time per daemon: fifty sessions read back at once (a relay reconnecting,
    // a daemon saving its exit records) would hold fifty logs' worth of buffers together.
    const run = rebuildQueue.then(() => this.rebuild());
    // The queue only orders rebuilds; a failed one reaches its caller through `run`.
    rebuildQueue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async rebuild(): Promise<void> {
    const { history } = this.host;
    const from = history.start;
    const planner = this.events.planner(from, this.retainedLines());
    let to = from;
    // Until the planner has everything the model was given (output keeps coming while the log is read).
    let complete = false;
    for (let round = 0; round < GROW_ROUNDS && !complete; round++) {
      this.host.flushModel();
      const head = history.head;
      while (to < head) {
        const end = Math.min(head, to + READ_PIECE_BYTES);
        const bytes = history.ring.slice(to, end) ?? (await history.read(to, end));
        if (!bytes) break;
        planner.feed(bytes);
        to = end;
        if (planner.parseBytes > REBUILD_MAX_PARSE_BYTES) break;
      }
      if (planner.parseBytes > REBUILD_MAX_PARSE_BYTES) break;
      if (to < head) break;
      this.host.flushModel();
      complete = history.head === to;
    }
    this.shrunk = false;
    this.host.retainLines(false);
    this.host.flushModel();
    if (!complete || history.head !== to) {
      // The log could not give the whole range: keep scrollback from now on.
      this.restarted = false;
      this.host.post({ kind: 'unshrink', sid: this.host.sid });
      return;
    }
    const force = this.restarted;
    this.restarted = false;
    this.host.post({ kind: 'grow', sid: this.host.sid, steps: planner.finish(), upTo: to, force });
    collectGarbageSoon();
  }
}

let rebuildQueue: Promise<void> = Promise.resolve();
