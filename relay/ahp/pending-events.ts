import type { FeedItem } from './terminal-channel.js';

/** How long events of a not-yet-published terminal are kept. */
export const PENDING_TTL_MS = 30_000;
/** Output bytes kept per unpublished terminal. */
export const PENDING_MAX_BYTES = 1024 * 1024;
/** Unpublished terminals tracked at once (oldest dropped first). */
export const PENDING_MAX_IDS = 256;

interface Pending {
  items: FeedItem[];
  bytes: number;
  firstAt: number;
}

/**
 * Provider events for ids the service has not published yet. A spawn's first output and facts
 * can arrive before `spawn()` resolves; they wait here (bounded in time, bytes and count) until
 * the terminal is registered and its channel takes them.
 */
export class PendingEvents {
  private readonly byId = new Map<string, Pending>();

  constructor(private readonly now: () => number = Date.now) {}

  push(id: string, item: FeedItem): void {
    this.sweep();
    let p = this.byId.get(id);
    if (!p) {
      if (this.byId.size >= PENDING_MAX_IDS) {
        const oldest = this.byId.keys().next().value;
        if (oldest !== undefined) this.byId.delete(oldest);
      }
      p = { items: [], bytes: 0, firstAt: this.now() };
      this.byId.set(id, p);
    }
    const size = item.kind === 'data' ? item.data.length : 0;
    if (p.bytes + size > PENDING_MAX_BYTES) return;
    p.bytes += size;
    p.items.push(item.kind === 'data' ? { ...item, data: Uint8Array.from(item.data) } : item);
  }

  /** Removes and returns what was queued for `id`. */
  take(id: string): FeedItem[] {
    const p = this.byId.get(id);
    this.byId.delete(id);
    return p?.items ?? [];
  }

  private sweep(): void {
    const cutoff = this.now() - PENDING_TTL_MS;
    for (const [id, p] of this.byId) {
      if (p.firstAt >= cutoff) break;
      this.byId.delete(id);
    }
  }

  clear(): void {
    this.byId.clear();
  }
}
