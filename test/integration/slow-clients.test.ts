import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyDataEvent } from '../../provider/contract.js';
import { creditFor } from '../../relay/flow/terminal-credit.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { open, type TestClient } from '../support/relay-test-support.js';
import { StreamFollower, seqBytes } from '../support/stream-follower.js';

/** Per-connection bound of encoded output (flowControl.highWatermark default). */
const BOUND = 1024 * 1024;
/** What one send may add past the bound: one batched frame and its JSON envelope. */
const FRAME_SLACK = 512 * 1024;

async function metric(url: string, name: string): Promise<number[]> {
  const res = await fetch(`${url.replace('ws:', 'http:')}/metrics`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
}

describe('slow clients cost the relay nothing (real sockets)', () => {
  let fx: RelayFixture;
  let proxy: FaultProxy;
  beforeAll(async () => {
    fx = await startRelay();
    proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port });
  });
  afterAll(async () => {
    await proxy.close();
    await fx.cleanup();
  });

  it('a reader is unaffected by stalled AHP and ptyrelay consumers, which stay bounded and resume exact or reset', async () => {
    const N = 1_500_000;
    const total = seqBytes(N);
    const reader = fx.client();
    const follow = new StreamFollower();
    let start = -1;
    const take = (e: PtyDataEvent) => {
      follow.take(e);
      if (start < 0 && Buffer.from(e.data).includes('READY')) start = e.seq + e.data.length;
    };
    // Listening before the spawn: READY can come in the spawn's reply or in the same read as it,
    // before a listener added after the spawn's promise settled would hear it.
    let id: string | undefined;
    const early: PtyDataEvent[] = [];
    reader.onData((e) => {
      if (id === undefined) early.push(e);
      else if (e.id === id) take(e);
    });
    const r = await reader.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['-c', `stty -echo; echo READY; read go; seq 1 ${N}; read end`],
    });
    id = r.id;
    if (r.replay && r.replay.length > 0)
      take({
        id: r.id,
        incarnationId: r.incarnationId,
        seq: r.providerSequence.value - r.replay.length,
        data: r.replay,
      });
    for (const e of early.splice(0)) if (e.id === r.id) take(e);
    await waitFor(() => start >= 0, 15_000, 'READY');
    start = follow.next;

    // A RelayClient whose path stalls (the proxy stops forwarding and holds what it read): the
    // relay's socket to it fills up.
    const stalled = fx.client({ url: `ws://127.0.0.1:${proxy.port}` });
    const late = new StreamFollower();
    stalled.onData((e) => e.id === r.id && late.take(e));
    stalled.onReattach((e) => e.id === r.id && late.reset(e));
    const at = await stalled.attach(r.id, { fromSeq: start });
    late.next = Math.max(late.next, at.providerSequence.value);

    // Ten AHP clients that subscribe and then stop reading.
    const ahp: TestClient[] = [];
    const channel = `ptyrelay-terminal:/${r.id}`;
    for (let i = 0; i < 10; i++) {
      const c = await open(fx.url, { token: TEST_TOKEN });
      await c.request('initialize', { protocolVersions: ['0.1.0'], clientId: `stalled-${i}` });
      await c.request('subscribe', { channel });
      (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      ahp.push(c);
    }
    proxy.stall();

    await reader.write(r.id, 'go\r');
    await waitFor(() => follow.next - start >= total, 90_000, 'the reader to get the whole stream');
    expect(follow.next - start).toBe(total);
    expect(follow.gaps).toEqual([]);

    // The relay holds about the bound per connection, not the stream.
    const perConn = await metric(fx.url, 'ptyrelay_client_buffered_bytes');
    expect(perConn.length).toBeGreaterThanOrEqual(11);
    for (const b of perConn) expect(b).toBeLessThan(BOUND + FRAME_SLACK);
    const [lagging] = await metric(fx.url, 'ptyrelay_lagging_consumers');
    expect(lagging).toBeGreaterThanOrEqual(1);

    // Resumed: the ptyrelay consumer gets exact bytes from its seq, or an explicit reset.
    proxy.restore();
    await waitFor(() => late.next - start >= total, 60_000, 'the stalled client to catch up');
    expect(late.gaps).toEqual([]);
    expect(late.next - start).toBe(total);
    // AHP peers resumed without being disconnected: a peer whose missed output left the action log
    // is resynchronized in place (terminal/cleared, then the current content); one whose socket,
    // the kernel's buffers on its path (loopback receive buffers grow up to tcp_rmem's maximum)
    // and the log held all of it got every byte, in order.
    const whole = Array.from({ length: N }, (_, i) => `${i + 1}\r\n`).join('');
    for (const c of ahp) (c.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const actionsOf = (c: TestClient) =>
      c.notifications
        .filter((n) => n.method === 'action')
        .map((n) => (n.params as { action: { type: string; data?: string } }).action);
    let resets = 0;
    for (const c of ahp) {
      await waitFor(
        () => c.closed !== undefined || actionsOf(c).some((a) => a.data?.includes(`${N}\r\n`)),
        30_000,
        'an AHP peer to catch up',
      );
      expect(c.closed).toBeUndefined();
      const actions = actionsOf(c);
      const cleared = actions.map((a) => a.type).lastIndexOf('terminal/cleared');
      const after = actions.slice(Math.max(0, cleared)).map((a) => a.data ?? '');
      const text = after.join('');
      if (cleared >= 0) {
        resets++;
        expect(text.includes(`${N}\r\n`)).toBe(true);
      } else expect(text.includes(whole)).toBe(true);
      c.close();
    }
    console.log(`AHP peers: ${resets} of ${ahp.length} resynchronized, the rest got every byte`);
    await reader.shutdown(r.id, { immediate: true });
  }, 180_000);

  it('pauses the PTY only when every consumer is behind, and resumes it when one reads', async () => {
    const owner = await open(fx.url, { token: TEST_TOKEN });
    await owner.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'owner' });
    const { channel } = await owner.request('createTerminal', {
      claim: { kind: 'client', clientId: 'owner' },
      command: 'yes',
      args: ['0123456789abcdefghijklmnopqrstuvwxyz'],
    });
    const watcher = await open(fx.url, { token: TEST_TOKEN });
    await watcher.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'watcher' });
    await watcher.request('subscribe', { channel });
    await owner.request('subscribe', { channel });
    const id = String(channel).slice('ptyrelay-terminal:/'.length);
    const credit = creditFor(fx.router);
    const pause = (c: TestClient) => (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const resume = (c: TestClient) => (c.ws as unknown as { _socket: { resume(): void } })._socket.resume();

    pause(owner);
    // One consumer still reads: the program keeps running, also once the owner's socket and the
    // kernel's buffers on its path are full (a few seconds of output).
    await new Promise((res) => setTimeout(res, 3000));
    const h0 = credit.consumers(id).head;
    await new Promise((res) => setTimeout(res, 2000));
    expect(credit.consumers(id).head - h0).toBeGreaterThan(BOUND);

    pause(watcher);
    // Both stalled: once their sockets are full, the head stops moving (the stub paused the PTY).
    let last = -1;
    let still = 0;
    await waitFor(
      () => {
        const h = credit.consumers(id).head;
        still = h === last ? still + 1 : 0;
        last = h;
        return still >= 40; // one second without output
      },
      30_000,
      'the PTY to pause',
    );
    expect(credit.consumers(id).lagging).toBe(1);

    resume(watcher);
    const h1 = credit.consumers(id).head;
    await waitFor(() => credit.consumers(id).head - h1 > BOUND, 30_000, 'the PTY to resume');
    owner.close();
    watcher.close();
    // The owner's socket is megabytes behind; dispose through a fresh connection of the same client.
    const again = await open(fx.url, { token: TEST_TOKEN });
    await again.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'owner' });
    await again.request('disposeTerminal', { channel });
    again.close();
  }, 90_000);
});
