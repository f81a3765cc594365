const KiB = 1024;
const MiB = 1024 * KiB;

/** One segment file: large enough that rolling (open, statfs) is rare, small enough that dropping the oldest frees little history at a time. */
export const DEFAULT_SEGMENT_BYTES = 4 * MiB;
/** History kept per session (Eternal Terminal keeps 64 MiB in RAM; we keep it on disk). */
export const DEFAULT_SESSION_HISTORY_BYTES = 64 * MiB;
/** History kept by all sessions of the host together. */
export const DEFAULT_HOST_HISTORY_BYTES = 1024 * MiB;
/** Share of the state dir's free space (counting what the history already holds) the history may take. */
export const DEFAULT_FREE_PERCENT = 10;
/** RAM tail per session while its log is healthy: live delivery and short replays. */
export const DEFAULT_TAIL_BYTES = 256 * KiB;
/**
 * RAM tail while the log is healthy of a session that is idle (its model dropped its scrollback
 * too; the tail is back at its next output or input) or that every attached link has in the
 * background (they keep a thinned tail of their own; bringing it back takes a snapshot): a
 * reconnect replays the newest bytes from RAM and older ones from the log. Fifty idle sessions
 * held 12.8 MB in full tails.
 */
export const IDLE_TAIL_BYTES = 16 * KiB;
const MIN_SEGMENT_BYTES = 64 * KiB;
const MAX_SEGMENT_BYTES = 64 * MiB;

/** The output history's bounds (flags of `stub.cjs daemon`). */
export interface HistoryLimits {
  /** False: no log, the RAM ring alone (`--history off`; the bench's A/B). */
  enabled: boolean;
  segmentBytes: number;
  sessionBytes: number;
  hostBytes: number;
  freePercent: number;
  tailBytes: number;
}

/** Fills defaults and checks relations; throws a RangeError naming the flag. */
export function resolveHistoryLimits(given: Partial<HistoryLimits>): HistoryLimits {
  const l: HistoryLimits = {
    enabled: given.enabled ?? true,
    segmentBytes: given.segmentBytes ?? DEFAULT_SEGMENT_BYTES,
    sessionBytes: given.sessionBytes ?? DEFAULT_SESSION_HISTORY_BYTES,
    hostBytes: given.hostBytes ?? DEFAULT_HOST_HISTORY_BYTES,
    freePercent: given.freePercent ?? DEFAULT_FREE_PERCENT,
    tailBytes: given.tailBytes ?? DEFAULT_TAIL_BYTES,
  };
  const fail = (m: string) => {
    throw new RangeError(m);
  };
  for (const [flag, v] of [
    ['--history-segment-bytes', l.segmentBytes],
    ['--history-session-bytes', l.sessionBytes],
    ['--history-host-bytes', l.hostBytes],
    ['--tail-bytes', l.tailBytes],
  ] as const) {
    if (!Number.isInteger(v) || v <= 0) fail(`${flag} must be a positive integer, got ${v}`);
  }
  if (l.segmentBytes < MIN_SEGMENT_BYTES || l.segmentBytes > MAX_SEGMENT_BYTES)
    fail(
      `--history-segment-bytes ${l.segmentBytes} must be between ${MIN_SEGMENT_BYTES} and ${MAX_SEGMENT_BYTES}`,
    );
  // Dropping the oldest segment must leave history behind: at least two segments per session.
  if (l.sessionBytes < 2 * l.segmentBytes)
    fail(
      `--history-session-bytes ${l.sessionBytes} must be at least twice --history-segment-bytes ${l.segmentBytes}`,
    );
  if (l.hostBytes < l.sessionBytes)
    fail(`--history-host-bytes ${l.hostBytes} must be at least --history-session-bytes ${l.sessionBytes}`);
  if (!(l.freePercent > 0 && l.freePercent <= 100))
    fail(`--history-free-percent ${l.freePercent} must be in (0, 100]`);
  return l;
}
