import type { ActionEnvelope, ActionOrigin, MalformedClientAction, StateAction, URI } from './types.js';

/** Default number of recent envelopes kept for `reconnect` replay. */
export const DEFAULT_REPLAY_ACTIONS = 10_000;
/** Default byte budget of the replay ring (approximate JSON size of the envelopes). */
export const DEFAULT_REPLAY_BYTES = 8 * 1024 * 1024;
/** Fixed per-envelope overhead added to the payload size estimate. */
const ENVELOPE_OVERHEAD_BYTES = 128;

/**
 * Where a new log's seqs start: the wall clock in microseconds. A `lastSeenServerSeq` means
 * something only to the process that issued it; a relay that restarted must never have issued the
 * same number, or a reconnect would replay its own unrelated envelopes as the ones the client
 * missed. Every later process starts above every seq an earlier one issued unless that one averaged
 * more than one envelope per microsecond over its life (or the clock stepped back further than it
 * lived). 2^53 µs is the year 2255.
 */
export function freshSeqBase(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/** One logged envelope and who may see it. */
export interface LogEntry {
  envelope: ActionEnvelope;
  /** Set for envelopes only their origin client receives (input echoes, rejections). */
  onlyClientId?: string;
  /** Bytes held for it (data string, JSON text once built). */
  bytes: number;
  /** The `action` notification's JSON text, once a peer needed it. */
  text?: string;
  /** False once evicted: its bytes no longer count toward the log. */
  live?: boolean;
}

/**
 * Bytes the entry holds: its data string (counted at two bytes per code unit, V8's worst case,
 * so the cap never under-counts) plus the JSON text once {@link entryText} built it.
 */
function heldBytes(action: StateAction | MalformedClientAction): number {
  if ('data' in action) {
    return 2 * action.data.length + ENVELOPE_OVERHEAD_BYTES;
  }
  return 2 * JSON.stringify(action).length + ENVELOPE_OVERHEAD_BYTES;
}

/**
 * The entry's `action` notification as JSON text, built once and shared by every peer it goes to
 * (each peer used to serialize the same envelope again). Its size is added to the entry's bytes.
 */
export function entryText(entry: LogEntry, log?: ActionLog): string {
  if (entry.text === undefined) {
    entry.text = JSON.stringify({ jsonrpc: '2.0', method: 'action', params: entry.envelope });
    log?.account(entry, entry.text.length);
  }
  return entry.text;
}

/**
 * Assigns server sequence numbers (strictly increasing, from `base + 1`) and keeps a bounded ring
 * of the most recent envelopes so a reconnecting client can be replayed exactly, or told that
 * it must take snapshots because the gap is no longer held.
 */
export class ActionLog {
  /** Held entries from `start` on; evicted slots are cleared at once so their strings can be collected. */
  private entries: (LogEntry | undefined)[] = [];
  /** Index of the oldest live entry in `entries` (compacted lazily). */
  private start = 0;
  private bytes = 0;
  private seq: number;

  constructor(
    private readonly maxActions = DEFAULT_REPLAY_ACTIONS,
    private readonly maxBytes = DEFAULT_REPLAY_BYTES,
    base = freshSeqBase(),
  ) {
    this.seq = base;
  }

  /** The last assigned server seq (the base before any action). */
  get serverSeq(): number {
    return this.seq;
  }

  /** Seq of the oldest envelope still held (serverSeq + 1 when empty). */
  get oldestSeq(): number {
    return this.start < this.entries.length ? this.entries[this.start]!.envelope.serverSeq : this.seq + 1;
  }

  /** Wraps `action` in an envelope with the next server seq and records it. */
  append(
    channel: URI,
    action: StateAction | MalformedClientAction,
    origin?: ActionOrigin,
    opts: { rejectionReason?: string; onlyClientId?: string } = {},
  ): LogEntry {
    const envelope: ActionEnvelope = { channel, action, serverSeq: ++this.seq, origin };
    if (opts.rejectionReason !== undefined) envelope.rejectionReason = opts.rejectionReason;
    const entry: LogEntry = { envelope, bytes: heldBytes(action), live: true };
    if (opts.onlyClientId !== undefined) entry.onlyClientId = opts.onlyClientId;
    this.entries.push(entry);
    this.bytes += entry.bytes;
    this.evict();
    return entry;
  }

  /** Bytes the log holds now (what the `replayBytes` cap counts). */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Adds bytes built later for a held entry (its JSON text). */
  account(entry: LogEntry, extra: number): void {
    entry.bytes += extra;
    if (!entry.live) return;
    this.bytes += extra;
    this.evict();
  }

  private evict(): void {
    while (
      this.start < this.entries.length &&
      (this.entries.length - this.start > this.maxActions || this.bytes > this.maxBytes)
    ) {
      const old = this.entries[this.start]!;
      this.bytes -= old.bytes;
      old.live = false;
      // Cleared now, not at the next compaction: a slot kept until then held its string, and up
      // to maxActions evicted 64 KiB chunks (hundreds of MB) stayed reachable (issue 20).
      this.entries[this.start] = undefined;
      this.start++;
    }
    if (this.start > 1024 && this.start * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.start);
      this.start = 0;
    }
  }

  /**
   * Every entry after `afterSeq`, oldest first; undefined when some of them were already
   * evicted or never issued by this log (`afterSeq` below its base or above its last seq: another
   * server process's).
   */
  since(afterSeq: number): LogEntry[] | undefined {
    if (!Number.isInteger(afterSeq) || afterSeq < 0 || afterSeq > this.seq) return undefined;
    if (afterSeq + 1 < this.oldestSeq) return undefined;
    const out: LogEntry[] = [];
    // Seqs are contiguous in the ring, so the first wanted entry is at a fixed offset.
    for (let i = this.start + (afterSeq + 1 - this.oldestSeq); i < this.entries.length; i++) {
      out.push(this.entries[i]!);
    }
    return out;
  }
}
