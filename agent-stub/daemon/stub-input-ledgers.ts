/** Sequence spaces remembered per kind (the least recently used is forgotten first). */
const MAX_ENTRIES = 4096;

/** Highest number per key, least recently used first, at most MAX_ENTRIES keys. */
class HighWater {
  private readonly map = new Map<string, number>();

  get(key: string): number {
    return this.map.get(key) ?? 0;
  }

  /** Raises `key` to `value` (a lower value leaves it) and marks it recently used. */
  raise(key: string, value: number): void {
    const now = Math.max(this.get(key), value);
    this.map.delete(key);
    this.map.set(key, now);
    if (this.map.size > MAX_ENTRIES) this.map.delete(this.map.keys().next().value as string);
  }
}

/**
 * The daemon's exactly-once input, shared by every connection: per link (a relay's linkId and
 * input epoch), the highest input seq applied, so a frame the relay resends on a new connection is
 * dropped; per client instance and terminal, the highest of that client's own input seqs applied,
 * so a frame a client resends through another relay (InputFrom frames) is dropped too.
 */
export class StubInputLedgers {
  private readonly links = new HighWater();
  private readonly origins = new HighWater();

  /** True when `inputSeq` is new on this link (and records it); false for a resent frame. */
  takeLink(linkKey: string, inputSeq: number): boolean {
    if (inputSeq <= this.links.get(linkKey)) return false;
    this.links.raise(linkKey, inputSeq);
    return true;
  }

  /** Every input seq up to this one is done on the link. */
  linkUpTo(linkKey: string): number {
    return this.links.get(linkKey);
  }

  /** True when the client's `originSeq` for terminal `id` was applied through some link already. */
  originApplied(origin: string, id: string, originSeq: number): boolean {
    return originSeq <= this.origins.get(`${origin}\n${id}`);
  }

  /** The client's `originSeq` for terminal `id` was applied. */
  noteOrigin(origin: string, id: string, originSeq: number): void {
    this.origins.raise(`${origin}\n${id}`, originSeq);
  }
}
