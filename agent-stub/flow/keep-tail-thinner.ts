import type { PtyFact } from '../../provider/contract.js';

/** Facts remembered per background session between flushes; beyond it, repeated bells/titles/cwds coalesce. */
const MAX_QUEUED_FACTS = 4096;

export type ThinnedEvent =
  | { kind: 'gap'; fromSeq: number; toSeq: number; droppedBytes: number }
  | { kind: 'fact'; seq: number; fact: PtyFact; dropped: boolean }
  | { kind: 'data'; seq: number; data: Uint8Array };

/**
 * Keep-tail thinning of one background session for one consumer: output accumulates, only the
 * last `keepBytes` of it survive to the next flush, and the facts found in the dropped part are
 * kept, so a flush yields — in stream order — a gap marker, the dropped region's facts, the kept
 * tail and the kept region's facts. Pure: the caller decides when to flush.
 */
export class KeepTailThinner {
  private chunks: { seq: number; data: Uint8Array }[] = [];
  private keptBytes = 0;
  /** Start of what has not been flushed yet (kept or dropped). */
  private fromSeq: number;
  /** Seq after the last byte pushed; the kept tail is [endSeq - keptBytes, endSeq). */
  private endSeq: number;
  private facts: { seq: number; fact: PtyFact }[] = [];

  constructor(
    startSeq: number,
    public keepBytes: number,
  ) {
    this.fromSeq = startSeq;
    this.endSeq = startSeq;
  }

  pushData(seq: number, data: Uint8Array): void {
    if (data.length === 0) return;
    this.chunks.push({ seq, data });
    this.keptBytes += data.length;
    this.endSeq = seq + data.length;
    this.trim();
  }

  pushFact(seq: number, fact: PtyFact): void {
    if (this.facts.length >= MAX_QUEUED_FACTS) {
      // Coalesce: a newer title/cwd replaces an older queued one; bells keep the first.
      const i = this.facts.findIndex((f) => f.fact.type === fact.type && fact.type !== 'commandFinished');
      if (i >= 0) {
        if (fact.type !== 'bell') this.facts.splice(i, 1);
        else return;
      }
    }
    this.facts.push({ seq, fact });
  }

  /** Bytes waiting to be flushed (the kept tail). */
  get pending(): number {
    return this.keptBytes;
  }

  get hasEvents(): boolean {
    return this.keptBytes > 0 || this.facts.length > 0 || this.keptStart() > this.fromSeq;
  }

  /** Everything since the last flush, in stream order; resets the accumulation. */
  flush(): ThinnedEvent[] {
    const out: ThinnedEvent[] = [];
    const keptStart = this.keptStart();
    if (keptStart > this.fromSeq) {
      out.push({
        kind: 'gap',
        fromSeq: this.fromSeq,
        toSeq: keptStart,
        droppedBytes: keptStart - this.fromSeq,
      });
    }
    let f = 0;
    for (; f < this.facts.length && this.facts[f].seq < keptStart; f++) {
      out.push({ kind: 'fact', ...this.facts[f], dropped: true });
    }
    if (this.chunks.length > 0) {
      const data =
        this.chunks.length === 1 ? this.chunks[0].data : Buffer.concat(this.chunks.map((c) => c.data));
      out.push({ kind: 'data', seq: keptStart, data });
    }
    for (; f < this.facts.length; f++) out.push({ kind: 'fact', ...this.facts[f], dropped: false });
    this.fromSeq = this.endSeq;
    this.chunks = [];
    this.keptBytes = 0;
    this.facts = [];
    return out;
  }

  private keptStart(): number {
    return this.endSeq - this.keptBytes;
  }

  private trim(): void {
    while (this.keptBytes > this.keepBytes && this.chunks.length > 0) {
      const first = this.chunks[0];
      const excess = this.keptBytes - this.keepBytes;
      if (first.data.length <= excess) {
        this.chunks.shift();
        this.keptBytes -= first.data.length;
      } else {
        this.chunks[0] = { seq: first.seq + excess, data: first.data.subarray(excess) };
        this.keptBytes -= excess;
      }
    }
  }
}
