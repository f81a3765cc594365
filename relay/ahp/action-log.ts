import { OutputArena, type StoredText } from './output-arena.js';
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

/** The `action` notification of an envelope, as UTF-8 JSON. */
function notificationText(envelope: ActionEnvelope): Buffer {
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: envelope }));
}

/**
 * One logged envelope and who may see it.
 *
 * Terminal output is most of what the log holds, and it stays there long enough (the replay ring)
 * to outlive V8's young generation: held as strings it died in the old generation, which V8 lets
 * grow to several times what is live before collecting it (a relay feeding stalled AHP clients
 * reached 350 MB). So an output envelope keeps its data only as UTF-8 in the log's
 * {@link OutputArena}, off V8's heap, and, once a JSON peer needs it, only as its notification's
 * text (built once and shared by every peer it goes to). A log whose peers all take raw Data frames
 * never builds that text. Other envelopes (small) are kept as objects and their text is built when
 * a peer first needs it.
 */
export class LogEntry {
  readonly channel: URI;
  readonly serverSeq: number;
  /** Set for envelopes only their origin client receives (input echoes, rejections). */
  readonly onlyClientId?: string;
  /** Bytes held for it: its data or its text, or the envelope object's estimate. */
  bytes: number;
  /** False once evicted: its bytes no longer count toward the log. */
  live = true;
  /** The envelope; once settled, an output envelope's data is empty here and held in `data` or `text`. */
  private held: ActionEnvelope;
  /** An output envelope's data (UTF-8, in the arena) until its text is built. */
  private data: StoredText | undefined;
  private text: Buffer | undefined;

  constructor(
    envelope: ActionEnvelope,
    onlyClientId: string | undefined,
    private readonly arena: OutputArena,
  ) {
    this.channel = envelope.channel;
    this.serverSeq = envelope.serverSeq;
    if (onlyClientId !== undefined) this.onlyClientId = onlyClientId;
    this.held = envelope;
    const { action } = envelope;
    // Until it is settled an output envelope is counted as its UTF-8 data (what it will hold).
    this.bytes =
      ('data' in action ? Buffer.byteLength(action.data) : 2 * JSON.stringify(action).length) +
      ENVELOPE_OVERHEAD_BYTES;
  }

  /**
   * Moves an output envelope's data off V8's heap once its delivery is done (the log calls it when
   * the next envelope comes): a JSON peer has built the text by then, and the text holds the data;
   * otherwise (raw-data peers only, or none) the data is kept as UTF-8. Nothing for other envelopes.
   */
  settle(): void {
    const { action } = this.held;
    if (!('data' in action) || action.data === '') return;
    if (this.text === undefined) {
      // An entry evicted before it settled keeps its envelope as it is (nothing would release it).
      if (!this.live) return;
      this.data = this.arena.store(action.data);
    }
    this.held = { ...this.held, action: { ...action, data: '' } };
  }

  /** Evicted: its data's place in the arena may be reused (the held text, if any, stays). */
  evicted(): void {
    this.live = false;
    if (this.data) this.arena.release(this.data);
  }

  /** The envelope (an output envelope's data is decoded again: replays and JSON peers only). */
  get envelope(): ActionEnvelope {
    const { action } = this.held;
    if (!('data' in action) || action.data !== '') return this.held;
    if (this.text) return (JSON.parse(this.text.toString('utf8')) as { params: ActionEnvelope }).params;
    if (this.data)
      return {
        ...this.held,
        action: { ...this.held.action, data: this.arena.read(this.data) },
      } as ActionEnvelope;
    return this.held;
  }

  /** The notification's text, building it (and counting it in `log`) on first use. */
  textIn(log?: ActionLog): Buffer {
    if (this.text === undefined) {
      const text = notificationText(this.envelope);
      // An output envelope's text holds its data too: it takes the data's place in the count.
      const { action } = this.held;
      const replaced = 'data' in action ? (this.data?.length ?? Buffer.byteLength(action.data)) : 0;
      this.text = text;
      if (this.data) this.arena.release(this.data);
      this.data = undefined;
      log?.account(this, text.length - replaced);
    }
    return this.text;
  }
}

/**
 * The entry's `action` notification as UTF-8 JSON text, built once and shared by every peer it
 * goes to. A text built after the entry was logged is added to its bytes.
 */
export function entryText(entry: LogEntry, log?: ActionLog): Buffer {
  return entry.textIn(log);
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
  /** Where settled output envelopes keep their data. */
  readonly arena = new OutputArena();

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
    return this.start < this.entries.length ? this.entries[this.start]!.serverSeq : this.seq + 1;
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
    // The previous envelope's delivery is over: its data can leave V8's heap.
    this.entries.at(-1)?.settle();
    const entry = new LogEntry(envelope, opts.onlyClientId, this.arena);
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
      old.evicted();
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
