import type { IPtyProvider, PtyDataEvent, Unsubscribe } from '../../provider/contract.js';
import { eachProvider } from '../core/each-provider.js';
import type { HostRouter } from '../core/rpc-types.js';

/**
 * The one place the relay acknowledges output to a provider (the providers run with
 * `manualAck`), so credit flows end to end from the consumers that keep up:
 * - every consumer of a terminal (a `ptyrelay/*` attachment, the AHP peers of its channel)
 *   reports how far it has taken the stream and whether it is lagging (its socket is behind by
 *   more than its bound, so it gets nothing until it drained and then resumes from the host's
 *   history);
 * - the provider is acknowledged up to the furthest position of a consumer that keeps up, so the
 *   fastest reader sets the pace and a stalled one never slows it or the program;
 * - when every consumer lags, nothing more is acknowledged and the stub pauses the PTY once its
 *   credit window is full;
 * - a terminal without consumers runs free (everything it delivers is acknowledged), as an
 *   unwatched PTY must never block;
 * - acknowledgements go by position (`acknowledgeDataTo`) to providers that take it, so the
 *   provider's credit is always ours, whatever re-attaches happened in between.
 */
export class TerminalCredit {
  private readonly flows = new Map<string, Flow>();
  private readonly offs: Unsubscribe[] = [];

  /** Follows every provider of `router`: output moves heads, gaps and resets move positions. */
  watch(providers: IPtyProvider[]): this {
    for (const p of providers) {
      this.offs.push(
        p.onData((e) => this.data(p, e)),
        p.onBackgroundStreamEvent?.((e) => {
          if (e.type === 'dataGap') this.jump(p, e.id, e.incarnationId, e.toSeq, false);
          else if (e.type === 'backgroundMarker' && !e.background)
            this.jump(p, e.id, e.incarnationId, e.seq, true);
        }),
      );
      if (p.onReattach) {
        this.offs.push(
          p.onReattach((e) => {
            if (e.sessionExpired) this.forget(e.id);
            else if (e.snapshot) this.jump(p, e.id, e.incarnationId, e.snapshot.seq, true);
          }),
        );
      }
    }
    return this;
  }

  dispose(): void {
    for (const off of this.offs.splice(0)) off();
  }

  /**
   * A consumer attached at `seq` (an attach or spawn result): the flow exists from here on, and
   * the provider counts the result as acknowledged up to `seq`.
   */
  open(provider: IPtyProvider, id: string, incarnationId: string, seq: number): void {
    const f = this.flow(provider, id, incarnationId, seq);
    f.acked = Math.max(f.acked, seq);
    f.head = Math.max(f.head, seq);
  }

  /** A provider output event: moves the head, and acknowledges it at once when nobody consumes. */
  data(provider: IPtyProvider, e: PtyDataEvent): void {
    const f = this.flow(provider, e.id, e.incarnationId, e.seq);
    f.head = Math.max(f.head, e.seq + e.data.length);
    if (f.consumers.size === 0) this.settle(e.id, f);
  }

  /**
   * The stream of `id` restarts or skips to `seq` (a snapshot reset, a background data gap):
   * what lies before it needs no acknowledgement from anyone.
   */
  jump(provider: IPtyProvider, id: string, incarnationId: string, seq: number, reset: boolean): void {
    const f = this.flow(provider, id, incarnationId, seq);
    if (reset) {
      f.acked = f.head = seq;
      // The provider's stream restarts here too: say so, so its credit position is the same as ours.
      f.provider.acknowledgeDataTo?.(id, f.incarnationId, seq);
    } else f.head = Math.max(f.head, seq);
    for (const c of f.consumers.values()) c.pos = reset ? seq : Math.max(c.pos, seq);
    this.settle(id, f);
  }

  /** Registers (or updates) consumer `key` of `id` at stream position `pos`. */
  report(id: string, key: object, pos: number, lagging = false): void {
    const f = this.flows.get(id);
    if (!f) return;
    const c = f.consumers.get(key);
    if (c) {
      c.pos = Math.max(c.pos, pos);
      c.lagging = lagging;
    } else f.consumers.set(key, { pos, lagging });
    this.settle(id, f);
  }

  /** Consumer `key` of `id` is gone; with none left the terminal runs free again. */
  drop(id: string, key: object): void {
    const f = this.flows.get(id);
    if (!f?.consumers.delete(key)) return;
    this.settle(id, f);
  }

  /** The terminal is gone. */
  forget(id: string): void {
    this.flows.delete(id);
  }

  /** Consumers of `id` that keep up / lag (for metrics and tests). */
  consumers(id: string): { keeping: number; lagging: number; acked: number; head: number } {
    const f = this.flows.get(id);
    let keeping = 0;
    let lagging = 0;
    for (const c of f?.consumers.values() ?? []) c.lagging ? lagging++ : keeping++;
    return { keeping, lagging, acked: f?.acked ?? 0, head: f?.head ?? 0 };
  }

  /** Lagging consumers over all terminals (for /metrics). */
  laggingTotal(): number {
    let n = 0;
    for (const f of this.flows.values()) for (const c of f.consumers.values()) if (c.lagging) n++;
    return n;
  }

  private flow(provider: IPtyProvider, id: string, incarnationId: string, seq: number): Flow {
    let f = this.flows.get(id);
    if (!f || f.incarnationId !== incarnationId) {
      // A new incarnation starts a new stream: its consumers report afresh.
      const consumers = f?.consumers ?? new Map<object, Consumer>();
      for (const c of consumers.values()) c.pos = 0;
      f = { provider, incarnationId, acked: seq, head: seq, consumers };
      this.flows.set(id, f);
    }
    return f;
  }

  private settle(id: string, f: Flow): void {
    let target = f.consumers.size === 0 ? f.head : -1;
    for (const c of f.consumers.values()) if (!c.lagging) target = Math.max(target, c.pos);
    target = Math.min(target, f.head);
    if (target > f.acked) {
      // By position where the provider takes it: a count of bytes drifts once the provider's own
      // position moved without us (an attach that catches up from the host's history restarts it
      // below what another consumer already acknowledged), and drifted credit stalls the program.
      if (f.provider.acknowledgeDataTo) f.provider.acknowledgeDataTo(id, f.incarnationId, target);
      else f.provider.acknowledgeDataEvent(id, target - f.acked);
      f.acked = target;
    }
  }
}

interface Consumer {
  pos: number;
  lagging: boolean;
}

interface Flow {
  provider: IPtyProvider;
  incarnationId: string;
  /** Acknowledged to the provider so far. */
  acked: number;
  /** Delivered by the provider so far. */
  head: number;
  consumers: Map<object, Consumer>;
}

const byRouter = new WeakMap<HostRouter, TerminalCredit>();

/** The one {@link TerminalCredit} of a router, shared by the AHP hub and the ptyrelay extension. */
export function creditFor(router: HostRouter): TerminalCredit {
  let c = byRouter.get(router);
  if (!c) {
    const credit = new TerminalCredit();
    eachProvider(router, (p) => credit.watch([p]));
    c = credit;
    byRouter.set(router, c);
  }
  return c;
}
