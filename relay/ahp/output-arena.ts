/** Size of one slab: many output envelopes each (a relay's chunks are at most tens of KiB). */
export const SLAB_BYTES = 256 * 1024;
/** Text larger than this gets a buffer of its own rather than most of a slab. */
const OWN_BUFFER_BYTES = SLAB_BYTES / 4;
/** Emptied slabs kept for reuse; more go back to the allocator (a log that shrank). */
const MAX_FREE_SLABS = 4;

interface Slab {
  readonly buf: Buffer;
  used: number;
  /** Texts stored in it and not released yet. */
  live: number;
  /** Counts its reuses: a text of an earlier use can no longer be read. */
  generation: number;
}

/** Where one text lies: in a slab, or (large) in a buffer of its own. */
export interface StoredText {
  readonly slab: Slab | undefined;
  readonly buf: Buffer;
  readonly start: number;
  readonly length: number;
  readonly generation: number;
  released: boolean;
}

/**
 * The action log's settled output, as UTF-8 in a few large slabs written in order and reused,
 * instead of a buffer per envelope. The log keeps megabytes of output for `reconnect` replay,
 * long enough for every envelope's buffer to outlive V8's young generation: one buffer each died
 * in the old generation, and a relay passing a flood to a RelayClient ran a full collection every
 * 5–9 MB (87–105 per 800 MB; 14–22 with slabs). Slabs live as long as the log holds output; what
 * a flood allocates per chunk then dies young.
 *
 * A slab whose texts were all released is reused only after the current turn of the event loop
 * and the immediates queued before its release: a delivery held until a reply went out
 * (AhpPeers.holdUntilReplied) may still read an envelope the log evicted meanwhile.
 */
export class OutputArena {
  private current: Slab | undefined;
  private readonly free: Slab[] = [];
  /** Slabs allocated so far (a flood through a bounded log allocates a bounded number). */
  slabsAllocated = 0;

  /** Stores `text` as UTF-8. */
  store(text: string): StoredText {
    const length = Buffer.byteLength(text, 'utf8');
    if (length > OWN_BUFFER_BYTES) {
      return {
        slab: undefined,
        buf: Buffer.from(text, 'utf8'),
        start: 0,
        length,
        generation: 0,
        released: false,
      };
    }
    let slab = this.current;
    if (!slab || slab.used + length > slab.buf.length) {
      if (slab && slab.live === 0) this.retire(slab);
      slab = this.free.pop() ?? this.allocate();
      slab.used = 0;
      slab.generation++;
      this.current = slab;
    }
    const start = slab.used;
    slab.buf.write(text, start, length, 'utf8');
    slab.used += length;
    slab.live++;
    return { slab, buf: slab.buf, start, length, generation: slab.generation, released: false };
  }

  /**
   * The text back. A released text still reads until its slab is reused (a held delivery of an
   * envelope evicted in the same turn); after that reading it is a bug, and throws.
   */
  read(t: StoredText): string {
    if (t.slab && t.slab.generation !== t.generation)
      throw new Error('output arena: the text was overwritten');
    return t.buf.toString('utf8', t.start, t.start + t.length);
  }

  /** The text is no longer needed; its slab is reused once every text in it was released. */
  release(t: StoredText): void {
    if (t.released) return;
    t.released = true;
    const slab = t.slab;
    if (!slab) return;
    slab.live--;
    if (slab.live === 0 && slab !== this.current) this.retire(slab);
  }

  private allocate(): Slab {
    this.slabsAllocated++;
    return { buf: Buffer.allocUnsafeSlow(SLAB_BYTES), used: 0, live: 0, generation: 0 };
  }

  /**
   * An immediate of its own per slab, queued now: one shared with slabs retired earlier in the
   * turn could run before a hold that began in between, and hand this slab out under it.
   */
  private retire(slab: Slab): void {
    setImmediate(() => {
      if (this.free.length < MAX_FREE_SLABS) this.free.push(slab);
    });
  }
}
