import { Counter, Gauge, Registry } from 'prom-client';
import type { LinkState, Unsubscribe } from '../../provider/contract.js';
import { eachProvider } from '../core/each-provider.js';
import type { HostRouter } from '../core/rpc-types.js';
import { creditFor } from '../flow/terminal-credit.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';

/** Every link state name, so each host exports all of them (1 for the current one). */
const LINK_STATES: LinkState['state'][] = [
  'idle',
  'connecting',
  'connected',
  'reconnecting',
  'lost',
  'deploy-failed',
];

/**
 * Link state per host (from the providers' `onLinkState`) plus the service's Prometheus metrics
 * in a private registry: published sessions, WebSocket connections, bytes sent, host link
 * reconnects and link state per host.
 */
export class RelayMetrics {
  readonly registry = new Registry();
  private readonly links = new Map<string, LinkState>();
  private readonly everConnected = new Set<string>();
  private readonly offs: Unsubscribe[] = [];
  private readonly bytesOut: Counter<'kind'>;
  private readonly reconnects: Counter<'host'>;
  private readonly connections: Gauge;
  /** Open connections, for the bytes they have queued. */
  private readonly open = new Set<{ connectionId: string; bufferedAmount: number }>();

  constructor(router: HostRouter, terminals: TerminalRegistry) {
    const open = this.open;
    const credit = creditFor(router);
    new Gauge({
      name: 'ptyrelay_client_buffered_bytes',
      help: 'Bytes queued in a WebSocket connection and not yet sent, per connection (first 8 characters of its id)',
      labelNames: ['conn'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const c of open) this.set({ conn: c.connectionId.slice(0, 8) }, c.bufferedAmount);
      },
    });
    new Gauge({
      name: 'ptyrelay_client_buffered_bytes_total',
      help: 'Bytes queued in all WebSocket connections together',
      registers: [this.registry],
      collect() {
        let n = 0;
        for (const c of open) n += c.bufferedAmount;
        this.set(n);
      },
    });
    new Gauge({
      name: 'ptyrelay_lagging_consumers',
      help: 'Consumers of terminals (ptyrelay attachments, AHP channels) that are behind and wait to resume from history',
      registers: [this.registry],
      collect() {
        this.set(credit.laggingTotal());
      },
    });
    for (const h of router.hosts()) this.links.set(h, { state: 'idle' });
    const links = this.links;
    new Gauge({
      name: 'ptyrelay_sessions',
      help: 'Terminals published by the relay service, per host',
      labelNames: ['host'],
      registers: [this.registry],
      collect() {
        this.reset();
        const counts = new Map<string, number>([...links.keys()].map((h) => [h, 0]));
        for (const r of terminals.list()) counts.set(r.host, (counts.get(r.host) ?? 0) + 1);
        for (const [host, n] of counts) this.set({ host }, n);
      },
    });
    new Gauge({
      name: 'ptyrelay_link_state',
      help: 'Link state per host (1 for the current state)',
      labelNames: ['host', 'state'],
      registers: [this.registry],
      collect() {
        for (const [host, s] of links) {
          for (const state of LINK_STATES) this.set({ host, state }, s.state === state ? 1 : 0);
        }
      },
    });
    this.connections = new Gauge({
      name: 'ptyrelay_connections',
      help: 'Open WebSocket connections',
      registers: [this.registry],
    });
    this.bytesOut = new Counter({
      name: 'ptyrelay_bytes_out_total',
      help: 'Bytes sent to WebSocket clients',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    this.reconnects = new Counter({
      name: 'ptyrelay_host_reconnects_total',
      help: 'Host links re-established after a drop',
      labelNames: ['host'],
      registers: [this.registry],
    });
    this.offs.push(
      eachProvider(router, (p) => {
        const off = p.onLinkState?.((e) => this.onLinkState(e.host, e.state));
        if (off) this.offs.push(off);
      }),
    );
  }

  /** Counts `conn`'s queued bytes in the buffered-bytes gauges until it closes. */
  track(conn: { connectionId: string; bufferedAmount: number; onClose(cb: () => void): void }): void {
    this.open.add(conn);
    conn.onClose(() => this.open.delete(conn));
  }

  private onLinkState(host: string, state: LinkState): void {
    this.links.set(host, state);
    if (state.state !== 'connected') return;
    if (this.everConnected.has(host)) this.reconnects.inc({ host });
    this.everConnected.add(host);
  }

  /** Current link state per host (for /healthz). */
  linkStates(): Record<string, LinkState> {
    return Object.fromEntries(this.links);
  }

  sent(kind: 'text' | 'binary', bytes: number): void {
    this.bytesOut.inc({ kind }, bytes);
  }

  connectionOpened(): void {
    this.connections.inc();
  }

  connectionClosed(): void {
    this.connections.dec();
  }

  /** Prometheus exposition text. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  dispose(): void {
    for (const off of this.offs.splice(0)) off();
  }
}
