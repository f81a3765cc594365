import { Counter, Gauge, Registry } from 'prom-client';
import type { LinkState } from '../../provider/contract.js';

/** Every link state name, so each host exports all of them (1 for the current one). */
const LINK_STATES: LinkState['state'][] = [
  'idle',
  'connecting',
  'connected',
  'reconnecting',
  'lost',
  'deploy-failed',
];

/** What the relay counted, read at each scrape (relay/service/metrics.ts keeps it). */
export interface MetricsSource {
  /** Open WebSocket connections with the bytes each has queued. */
  open: ReadonlySet<{ connectionId: string; bufferedAmount: number }>;
  laggingTotal(): number;
  links: ReadonlyMap<string, LinkState>;
  /** Published terminals per host (hosts without any included, as 0). */
  sessionsPerHost(): Map<string, number>;
  bytesOut: Readonly<Record<'text' | 'binary', number>>;
  reconnects: ReadonlyMap<string, number>;
}

/**
 * The relay's Prometheus metrics in a private prom-client registry, every one read from the
 * {@link MetricsSource} when scraped. Built on the first scrape: prom-client is several megabytes
 * of an idle relay's memory, and most relays are never scraped.
 */
export class MetricsExposition {
  readonly registry = new Registry();

  constructor(src: MetricsSource) {
    const registers = [this.registry];
    new Gauge({
      name: 'ptyrelay_client_buffered_bytes',
      help: 'Bytes queued in a WebSocket connection and not yet sent, per connection (first 8 characters of its id)',
      labelNames: ['conn'],
      registers,
      collect() {
        this.reset();
        for (const c of src.open) this.set({ conn: c.connectionId.slice(0, 8) }, c.bufferedAmount);
      },
    });
    new Gauge({
      name: 'ptyrelay_client_buffered_bytes_total',
      help: 'Bytes queued in all WebSocket connections together',
      registers,
      collect() {
        let n = 0;
        for (const c of src.open) n += c.bufferedAmount;
        this.set(n);
      },
    });
    new Gauge({
      name: 'ptyrelay_lagging_consumers',
      help: 'Consumers of terminals (ptyrelay attachments, AHP channels) that are behind and wait to resume from history',
      registers,
      collect() {
        this.set(src.laggingTotal());
      },
    });
    this.hostGauges(src);
    this.counters(src);
  }

  private hostGauges(src: MetricsSource): void {
    const registers = [this.registry];
    new Gauge({
      name: 'ptyrelay_sessions',
      help: 'Terminals published by the relay service, per host',
      labelNames: ['host'],
      registers,
      collect() {
        this.reset();
        for (const [host, n] of src.sessionsPerHost()) this.set({ host }, n);
      },
    });
    new Gauge({
      name: 'ptyrelay_link_state',
      help: 'Link state per host (1 for the current state)',
      labelNames: ['host', 'state'],
      registers,
      collect() {
        for (const [host, s] of src.links) {
          for (const state of LINK_STATES) this.set({ host, state }, s.state === state ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'ptyrelay_connections',
      help: 'Open WebSocket connections',
      registers,
      collect() {
        this.set(src.open.size);
      },
    });
  }

  private counters(src: MetricsSource): void {
    const registers = [this.registry];
    new Counter({
      name: 'ptyrelay_bytes_out_total',
      help: 'Bytes sent to WebSocket clients',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        for (const kind of ['text', 'binary'] as const) this.inc({ kind }, src.bytesOut[kind]);
      },
    });
    new Counter({
      name: 'ptyrelay_host_reconnects_total',
      help: 'Host links re-established after a drop',
      labelNames: ['host'],
      registers,
      collect() {
        this.reset();
        for (const [host, n] of src.reconnects) this.inc({ host }, n);
      },
    });
  }
}
