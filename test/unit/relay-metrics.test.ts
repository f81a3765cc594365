import { describe, expect, it } from 'vitest';
import type { IPtyProvider, LinkState } from '../../provider/contract.js';
import { routerOver } from '../../relay/service/host-router.js';
import { RelayMetrics } from '../../relay/service/metrics.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';

/**
 * A provider of host `h1` whose link state events the test emits; its other event subscriptions
 * (the flow-control side of the metrics subscribes to some) receive nothing.
 */
function linkStates(): { provider: IPtyProvider; emit(state: LinkState): void } {
  let listener: ((e: { host: string; state: LinkState }) => void) | undefined;
  const provider = new Proxy(
    {
      onLinkState(cb: typeof listener) {
        listener = cb;
        return () => {};
      },
    },
    {
      get: (target, key) =>
        key in target
          ? target[key as keyof typeof target]
          : String(key).startsWith('on')
            ? () => () => {}
            : undefined,
    },
  ) as unknown as IPtyProvider;
  return { provider, emit: (state) => listener?.({ host: 'h1', state }) };
}

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('RelayMetrics (plain counts; prom-client only when scraped)', () => {
  it('the first scrape shows everything counted before it, and later scrapes follow', async () => {
    const link = linkStates();
    const terminals = new TerminalRegistry();
    const metrics = new RelayMetrics(routerOver({ h1: link.provider }), terminals);
    let closeConn: () => void = () => {};
    metrics.track({ connectionId: 'abcdefgh-1234', bufferedAmount: 300, onClose: (cb) => (closeConn = cb) });
    metrics.sent('text', 1000);
    metrics.sent('binary', 24);
    metrics.sent('text', 1);
    link.emit({ state: 'connected' });
    link.emit({ state: 'reconnecting', attempt: 1, nextInMs: 100 });
    link.emit({ state: 'connected' });
    terminals.add({
      id: 'h1/pty-1',
      host: 'h1',
      claim: { kind: 'none' },
      title: 't',
      cols: 80,
      rows: 24,
      incarnationId: 'i',
      createdAt: 0,
    });
    const first = await metrics.exposed();
    expect(first.contentType).toMatch(/^text\/plain/);
    expect(value(first.text, 'ptyrelay_bytes_out_total{kind="text"}')).toBe(1001);
    expect(value(first.text, 'ptyrelay_bytes_out_total{kind="binary"}')).toBe(24);
    expect(value(first.text, 'ptyrelay_host_reconnects_total{host="h1"}')).toBe(1);
    expect(value(first.text, 'ptyrelay_connections')).toBe(1);
    expect(value(first.text, 'ptyrelay_client_buffered_bytes{conn="abcdefgh"}')).toBe(300);
    expect(value(first.text, 'ptyrelay_client_buffered_bytes_total')).toBe(300);
    expect(value(first.text, 'ptyrelay_sessions{host="h1"}')).toBe(1);
    expect(value(first.text, 'ptyrelay_link_state{host="h1",state="connected"}')).toBe(1);
    expect(value(first.text, 'ptyrelay_link_state{host="h1",state="reconnecting"}')).toBe(0);

    metrics.sent('text', 9);
    closeConn();
    const second = await metrics.exposed();
    expect(value(second.text, 'ptyrelay_bytes_out_total{kind="text"}')).toBe(1010);
    expect(value(second.text, 'ptyrelay_connections')).toBe(0);
    expect(value(second.text, 'ptyrelay_client_buffered_bytes{conn="abcdefgh"}')).toBeUndefined();
    expect(second.text).toContain('# TYPE ptyrelay_bytes_out_total counter');
    metrics.dispose();
  });
});
