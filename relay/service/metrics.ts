import type { LinkState, Unsubscribe } from '../../provider/contract.js';
import { eachProvider } from '../core/each-provider.js';
import type { HostRouter } from '../core/rpc-types.js';
import { creditFor, type TerminalCredit } from '../flow/terminal-credit.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import type { MetricsExposition, MetricsSource } from './metrics-exposition.js';

/**
 * What the relay counts for its Prometheus metrics, in plain numbers: link state per host (from
 * the providers' `onLinkState`, also for /healthz), open WebSocket connections and their queued
 * bytes, bytes sent, host link reconnects. The exposition (prom-client, in
 * metrics-exposition.ts) is loaded on the first scrape and reads these.
 */
export class RelayMetrics implements MetricsSource {
  readonly links = new Map<string, LinkState>();
  readonly bytesOut = { text: 0, binary: 0 };
  readonly reconnects = new Map<string, number>();
  /** Open connections, for the bytes they have queued. */
  readonly open = new Set<{ connectionId: string; bufferedAmount: number }>();
  private readonly everConnected = new Set<string>();
  private readonly offs: Unsubscribe[] = [];
  private readonly credit: TerminalCredit;
  private exposition: Promise<MetricsExposition> | undefined;

  constructor(
    router: HostRouter,
    private readonly terminals: TerminalRegistry,
  ) {
    this.credit = creditFor(router);
    for (const h of router.hosts()) this.links.set(h, { state: 'idle' });
    this.offs.push(
      eachProvider(router, (p) => {
        const off = p.onLinkState?.((e) => this.onLinkState(e.host, e.state));
        if (off) this.offs.push(off);
      }),
    );
  }

  laggingTotal(): number {
    return this.credit.laggingTotal();
  }

  sessionsPerHost(): Map<string, number> {
    const counts = new Map<string, number>([...this.links.keys()].map((h) => [h, 0]));
    for (const r of this.terminals.list()) counts.set(r.host, (counts.get(r.host) ?? 0) + 1);
    return counts;
  }

  /** Counts `conn`'s queued bytes in the buffered-bytes gauges until it closes. */
  track(conn: { connectionId: string; bufferedAmount: number; onClose(cb: () => void): void }): void {
    this.open.add(conn);
    conn.onClose(() => this.open.delete(conn));
  }

  private onLinkState(host: string, state: LinkState): void {
    this.links.set(host, state);
    if (state.state !== 'connected') return;
    if (this.everConnected.has(host)) this.reconnects.set(host, (this.reconnects.get(host) ?? 0) + 1);
    this.everConnected.add(host);
  }

  /** Current link state per host (for /healthz). */
  linkStates(): Record<string, LinkState> {
    return Object.fromEntries(this.links);
  }

  sent(kind: 'text' | 'binary', bytes: number): void {
    this.bytesOut[kind] += bytes;
  }

  /** Prometheus exposition text and its content type (prom-client is loaded on the first call). */
  async exposed(): Promise<{ text: string; contentType: string }> {
    this.exposition ??= import('./metrics-exposition.js').then((m) => new m.MetricsExposition(this));
    const { registry } = await this.exposition;
    return { text: await registry.metrics(), contentType: registry.contentType };
  }

  dispose(): void {
    for (const off of this.offs.splice(0)) off();
  }
}
