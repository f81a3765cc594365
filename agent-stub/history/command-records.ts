import type { AgentCommand } from '../../provider/contract.js';
import { MAX_COMMAND_RECORDS } from '../../provider/wire/command-messages.js';

/** Where a seq sits among the log's lines: the line its byte belongs to, and whether it starts it. */
export interface LinePosition {
  line: number;
  atLineStart: boolean;
}

/** A point of the output: its seq and, when the session keeps a log, its line position. */
export interface OutputPoint {
  seq: number;
  pos?: LinePosition;
}

/** One record with where its output lies: the bytes `[startSeq, endSeq)`. */
export interface CommandRecord {
  id: string;
  commandLine: string;
  cwd?: string;
  startedAt: number;
  durationMs?: number;
  exitCode?: number;
  start: OutputPoint;
  /** Set when the command ended (its end marker, the next command's start, or the shell's exit). */
  end?: OutputPoint;
}

const LF = 0x0a;

/**
 * Where the bytes of `data` (output about to be appended where the line position is `pos`) put
 * each offset into it: the points of the command facts found in that output.
 */
export function pointsIn(
  data: Uint8Array,
  base: number,
  pos: LinePosition | undefined,
): (offset: number) => OutputPoint {
  return (offset) => {
    if (!pos) return { seq: base + offset };
    let line = pos.line;
    for (let i = data.indexOf(LF); i >= 0 && i < offset; i = data.indexOf(LF, i + 1)) line++;
    const atLineStart = offset === 0 ? pos.atLineStart : data[offset - 1] === LF;
    return { seq: base + offset, pos: { line, atLineStart } };
  };
}

/** `[lineBegin, lineEnd)` of output that runs from `start` to `end`. */
export function lineRange(start: LinePosition, end: LinePosition, empty: boolean): [number, number] {
  if (empty) return [start.line, start.line];
  return [start.line, end.line + (end.atLineStart ? 0 : 1)];
}

/**
 * The commands a terminal's shell ran, recorded as the shell integration's facts arrive (the
 * OSC 633 markers are stripped before the history, so records cannot be rebuilt from it later):
 * `started` at the command's output start (633;C), `finished` at its end (633;D). Each gets the
 * next id (`c1`, `c2`, …) and keeps where its output lies, by seq and by log line, so a read can
 * return exactly its output. Keeps the newest {@link MAX_COMMAND_RECORDS}. Pure: no I/O, no clock.
 */
export class CommandRecords {
  private readonly list: CommandRecord[] = [];
  private count = 0;

  /** Commands recorded so far (the last id is `c<total>`). */
  get total(): number {
    return this.count;
  }

  started(at: OutputPoint, commandLine: string, cwd: string | undefined, now: number): CommandRecord {
    this.ended(at);
    const rec: CommandRecord = {
      id: `c${++this.count}`,
      commandLine,
      ...(cwd !== undefined ? { cwd } : {}),
      startedAt: now,
      start: at,
    };
    this.list.push(rec);
    if (this.list.length > MAX_COMMAND_RECORDS) this.list.shift();
    return rec;
  }

  /** The running command finished; nothing when none runs (an end marker without a start). */
  finished(at: OutputPoint, f: { exitCode?: number; durationMs?: number; commandLine?: string }): void {
    const rec = this.running;
    if (!rec) return;
    rec.end = at;
    if (f.exitCode !== undefined) rec.exitCode = f.exitCode;
    if (f.durationMs !== undefined) rec.durationMs = f.durationMs;
    if (rec.commandLine === '' && f.commandLine) rec.commandLine = f.commandLine;
  }

  /** The running command ended without an end marker (the shell exited, or started another). */
  ended(at: OutputPoint): void {
    const rec = this.running;
    if (rec) rec.end = at;
  }

  get running(): CommandRecord | undefined {
    const last = this.list[this.list.length - 1];
    return last && !last.end ? last : undefined;
  }

  get(id: string): CommandRecord | undefined {
    const n = Number(id.slice(1));
    // Ids are consecutive: c<n> sits at a known index unless it was dropped.
    const rec = this.list[this.list.length - (this.count - n) - 1];
    return rec?.id === id ? rec : undefined;
  }

  /** Ids of the commands that started at `seq` or later, oldest first. */
  startedSince(seq: number): string[] {
    let i = this.list.length;
    while (i > 0 && this.list[i - 1].start.seq >= seq) i--;
    return this.list.slice(i).map((r) => r.id);
  }

  /** The newest `count` records, newest first. */
  newest(count: number): CommandRecord[] {
    return this.list.slice(-count).reverse();
  }
}

/**
 * A record as the wire shows it. `head`: where the output stands now, for a running command's
 * lines so far. Line ranges only when both ends have a line position (the session keeps a log).
 */
export function describeCommand(rec: CommandRecord, head: OutputPoint): AgentCommand {
  const end = rec.end ?? head;
  const range =
    rec.start.pos && end.pos ? lineRange(rec.start.pos, end.pos, end.seq === rec.start.seq) : undefined;
  return {
    id: rec.id,
    commandLine: rec.commandLine,
    ...(rec.cwd !== undefined ? { cwd: rec.cwd } : {}),
    startedAt: rec.startedAt,
    running: !rec.end,
    ...(rec.durationMs !== undefined ? { durationMs: rec.durationMs } : {}),
    ...(rec.exitCode !== undefined ? { exitCode: rec.exitCode } : {}),
    ...(range ? { lineBegin: range[0], lineEnd: range[1] } : {}),
  };
}
