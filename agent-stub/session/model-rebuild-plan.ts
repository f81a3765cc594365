import { ModelFeeder } from './model-feeder.js';
import type { RebuildStep } from './model-protocol.js';

/** Size changes and clears remembered per session; older ones are folded into the starting size. */
const MAX_MODEL_EVENTS = 256;

type ModelEvent =
  | { seq: number; kind: 'resize'; cols: number; rows: number }
  | { seq: number; kind: 'clear' };

/**
 * What the model saw besides output, by the seq it came at: a model rebuilt from the log applies
 * the same resizes (reflow) and clears at the same points, so it ends where the live one did.
 * Pure: fed events, asked for a plan.
 */
export class ModelEvents {
  private readonly events: ModelEvent[] = [];
  /** Size before the first remembered event. */
  private base: { cols: number; rows: number };

  constructor(cols: number, rows: number) {
    this.base = { cols, rows };
  }

  resize(seq: number, cols: number, rows: number): void {
    this.push({ seq, kind: 'resize', cols, rows });
  }

  clear(seq: number): void {
    this.push({ seq, kind: 'clear' });
  }

  /**
   * The steps that rebuild the model from `bytes`, the stream from seq `from` (see
   * {@link RebuildPlanner}; this is the whole range at once).
   */
  plan(from: number, bytes: Uint8Array, retainedLines: number): RebuildStep[] {
    const p = this.planner(from, retainedLines);
    p.feed(bytes);
    return p.finish();
  }

  /** A planner for the stream from seq `from`, fed in pieces. */
  planner(from: number, retainedLines: number): RebuildPlanner {
    let size = this.base;
    for (const e of this.events)
      if (e.seq <= from && e.kind === 'resize') size = { cols: e.cols, rows: e.rows };
    return new RebuildPlanner(from, size, retainedLines, (after, upTo) =>
      this.events.filter((e) => e.seq > after && e.seq <= upTo),
    );
  }

  private push(e: ModelEvent): void {
    this.events.push(e);
    while (this.events.length > MAX_MODEL_EVENTS) {
      const old = this.events.shift() as ModelEvent;
      if (old.kind === 'resize') this.base = { cols: old.cols, rows: old.rows };
    }
  }
}

/**
 * Turns the stream from seq `from`, fed in pieces, into rebuild steps: the size in force at
 * `from`, then the stream cut at every later resize and clear. Line output that would scroll out
 * of what the model keeps (`retainedLines`: scrollback + screen) is skipped as the live feeder
 * skips it, while it is fed, so a 64 MiB log of lines is held a few MiB at a time and costs a
 * parse of its last lines only.
 */
export class RebuildPlanner {
  private readonly steps: RebuildStep[];
  private feeder: ModelFeeder | undefined;
  private at: number;
  private posted = 0;

  constructor(
    from: number,
    size: { cols: number; rows: number },
    private readonly retainedLines: number,
    private readonly eventsIn: (after: number, upTo: number) => ModelEvent[],
  ) {
    this.at = from;
    this.steps = [{ kind: 'size', ...size }];
  }

  /** The next bytes of the stream. */
  feed(bytes: Uint8Array): void {
    let off = 0;
    for (const e of this.eventsIn(this.at, this.at + bytes.length)) {
      const cut = e.seq - this.at;
      if (cut > off) this.push(bytes.subarray(off, cut));
      this.endRun();
      this.steps.push(
        e.kind === 'resize' ? { kind: 'resize', cols: e.cols, rows: e.rows } : { kind: 'clear' },
      );
      off = Math.max(off, cut);
    }
    if (off < bytes.length) this.push(bytes.subarray(off));
    this.at += bytes.length;
  }

  /** Bytes the rebuilt model will parse so far (what skipping kept). */
  get parseBytes(): number {
    return this.posted + (this.feeder?.backlog ?? 0);
  }

  finish(): RebuildStep[] {
    this.endRun();
    return this.steps;
  }

  private push(data: Uint8Array): void {
    this.feeder ??= new ModelFeeder(
      {
        post: (_seq, d) => {
          this.posted += d.length;
          this.steps.push({ kind: 'data', data: d });
        },
        backpressure: () => {},
      },
      this.retainedLines,
    );
    // The feeder may keep a view of `data` until it posts: give it its own copy of a piece.
    this.feeder.push(0, Buffer.from(data));
  }

  private endRun(): void {
    this.feeder?.flushAll();
    this.feeder?.dispose();
    this.feeder = undefined;
  }
}
