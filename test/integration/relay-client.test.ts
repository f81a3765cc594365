import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayClient } from '../../provider/client/relay-client.js';
import type { LinkState, PtyExitEvent, PtyFactEvent, PtyReattachEvent } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';

/** Lines `1..n` as a PTY prints them. */
function numbered(n: number): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${i}\r\n`;
  return s;
}

function relayStates(c: RelayClient): LinkState['state'][] {
  const seen: LinkState['state'][] = [];
  c.onLinkState?.((e) => {
    if (e.host === 'relay') seen.push(e.state.state);
  });
  return seen;
}

describe('RelayClient against a real relay and local daemon', () => {
  let fx: RelayFixture;
  let proxy: FaultProxy;

  beforeAll(async () => {
    fx = await startRelay();
    proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port });
  });
  afterAll(async () => {
    await proxy?.close();
    await fx?.cleanup();
  });

  const viaProxy = (clientId?: string) =>
    fx.client({ url: `ws://127.0.0.1:${proxy.port}`, clientId, reconnect: { steps: [50, 100, 200] } });

  async function open(c: RelayClient, command: string, args: string[] = []) {
    const out = new OutputCollector(c);
    const r = await c.spawn({
      cols: 100,
      rows: 30,
      command,
      args,
      env: { HOME: fx.local.home },
      cwd: fx.local.home,
    });
    out.bind(r.id);
    return { r, out };
  }

  it('passes the provider basics: echo, contiguous seq, facts, exit code', async () => {
    const c = fx.client();
    const facts: PtyFactEvent[] = [];
    const exits: PtyExitEvent[] = [];
    c.onFact((e) => facts.push(e));
    c.onExit((e) => exits.push(e));
    const { r, out } = await open(c, 'bash');
    expect(r.id).toMatch(/^local\/pty-\d+$/);
    expect(r.providerSequence.generation).toBe('continued');
    await waitFor(() => facts.some((f) => f.id === r.id && f.fact.type === 'commandDetectionAvailable'));
    await c.write(r.id, 'echo round-$((20+3))-trip\r');
    await out.waitText('round-23-trip\r\n');
    await c.write(r.id, 'printf "a%.0s" $(seq 1 5000); echo\r');
    await out.waitText(/a{5000}/);
    await waitFor(() => facts.some((f) => f.fact.type === 'commandFinished' && f.fact.exitCode === 0));
    expect(await c.getCwd(r.id)).toBe(fx.local.home);
    expect((await c.listProcesses()).map((t) => t.id)).toContain(r.id);
    expect((await c.getBufferSnapshot(r.id)).data).toContain('round-23-trip');
    await c.write(r.id, 'exit 3\r');
    const exit = await waitFor(() => exits.find((e) => e.id === r.id));
    expect(exit).toMatchObject({ exitCode: 3, incarnationId: r.incarnationId });
    expect(out.gaps).toEqual([]);
    expect(out.text).not.toContain('\x1b]633');
  });

  it('resumes exactly after the WebSocket is cut mid-stream, several times', async () => {
    const c = viaProxy();
    const resets: PtyReattachEvent[] = [];
    c.onReattach?.((e) => resets.push(e));
    const states = relayStates(c);
    const N = 200_000;
    // Produced over ~1.5 s and throttled, so every cut lands with output in flight.
    const script = `stty -echo; echo READY; read go; for k in $(seq 0 39); do seq $((k*5000+1)) $((k*5000+5000)); sleep 0.03; done; echo DONE; read end`;
    const { r, out } = await open(c, 'bash', ['-c', script]);
    await out.waitText('READY');
    proxy.throttle(1_000_000);
    await c.write(r.id, 'go\r');
    for (const at of [200_000, 500_000, 800_000]) {
      await waitFor(() => c.linkState.state === 'connected' && out.nextSeq > at, 20_000, `${at} bytes`);
      proxy.cut();
    }
    const text = await out.waitText('DONE\r\n', 30_000);
    proxy.restore();
    expect(proxy.stats().cuts).toBeGreaterThanOrEqual(3);
    expect(states.filter((s) => s === 'reconnecting').length).toBeGreaterThanOrEqual(3);
    expect(out.gaps).toEqual([]);
    expect(resets).toEqual([]);
    // Every line exactly once, in order.
    const body = text.slice(text.indexOf('READY\r\n') + 7, text.indexOf('DONE\r\n'));
    expect(body === numbered(N)).toBe(true);
    await c.shutdown(r.id, { immediate: true });
  });

  it('applies input typed during an outage exactly once, and resent in-flight input once', async () => {
    const c = viaProxy();
    const { r, out } = await open(c, 'bash', ['-c', 'stty -echo; echo READY; exec cat']);
    await out.waitText('READY');
    // Applied by the relay but cut before the acks came back: resent on the new socket and
    // de-duplicated by the relay (200 ms each way, cut at 300 ms).
    proxy.delay(200);
    const writes: Promise<void>[] = [];
    for (let i = 1; i <= 100; i++) writes.push(c.write(r.id, `line-${i}\r`));
    await new Promise((res) => setTimeout(res, 300));
    proxy.cut();
    proxy.restore();
    // Sent in the same tick as a cut: never reached the relay, resent.
    for (let i = 101; i <= 200; i++) {
      writes.push(c.write(r.id, `line-${i}\r`));
      if (i === 150) proxy.cut();
    }
    await Promise.all(writes);
    await out.waitText('line-200\r\n');
    // Typed while no relay is reachable: queued, then applied once.
    proxy.refuse(true);
    proxy.cut();
    await waitFor(() => c.linkState.state === 'reconnecting');
    const queued = c.write(r.id, 'typed-offline\r');
    const tooMuch = await c.write(r.id, 'x'.repeat(70 * 1024)).catch((e) => e);
    expect(isPtyRelayError(tooMuch, 'INPUT_QUEUE_FULL')).toBe(true);
    await new Promise((res) => setTimeout(res, 300));
    proxy.refuse(false);
    await queued;
    await out.waitText('typed-offline\r\n');
    await c.write(r.id, 'after\r');
    await out.waitText('after\r\n');
    const lines = out.text.split('\r\n');
    for (let i = 1; i <= 200; i++) expect(lines.filter((l) => l === `line-${i}`)).toHaveLength(1);
    expect(lines.filter((l) => l === 'typed-offline')).toHaveLength(1);
    expect(lines.indexOf('line-200')).toBeLessThan(lines.indexOf('typed-offline'));
    expect(out.gaps).toEqual([]);
    await c.shutdown(r.id, { immediate: true });
  });

  it("stays exact when the relay's own link to the daemon drops mid-stream", async () => {
    const c = fx.client();
    const resets: PtyReattachEvent[] = [];
    c.onReattach?.((e) => resets.push(e));
    const N = 60_000;
    const script = `stty -echo; echo READY; read go; for k in $(seq 0 11); do seq $((k*5000+1)) $((k*5000+5000)); sleep 0.05; done; echo DONE; read end`;
    const { r, out } = await open(c, 'bash', ['-c', script]);
    await out.waitText('READY');
    await c.write(r.id, 'go\r');
    await out.waitText('10000\r\n');
    (fx.router.providerFor('local') as unknown as { dropLink(h?: string): void }).dropLink('local');
    const text = await out.waitText('DONE\r\n', 20_000);
    expect(out.gaps).toEqual([]);
    expect(resets).toEqual([]);
    const body = text.slice(text.indexOf('READY\r\n') + 7, text.indexOf('DONE\r\n'));
    expect(body === numbered(N)).toBe(true);
    await c.shutdown(r.id, { immediate: true });
  });

  it('enforces claims: another client can watch but gets NOT_OWNER on write and kill', async () => {
    const owner = fx.client({ clientId: 'owner' });
    const other = fx.client({ clientId: 'intruder' });
    const { r, out } = await open(owner, 'bash', ['-c', 'stty -echo; echo READY; exec cat']);
    await out.waitText('READY');
    const err = await other.write(r.id, 'nope\r').catch((e) => e);
    expect(isPtyRelayError(err, 'NOT_OWNER')).toBe(true);
    const kill = await other.shutdown(r.id).catch((e) => e);
    expect(isPtyRelayError(kill, 'NOT_OWNER')).toBe(true);
    const sig = await other.sendSignal(r.id, 'SIGINT').catch((e) => e);
    expect(isPtyRelayError(sig, 'NOT_OWNER')).toBe(true);
    // Watching is allowed.
    const watch = new OutputCollector(other);
    const a = await other.attach(r.id);
    watch.bind(a.id);
    await owner.write(r.id, 'seen-by-both\r');
    await out.waitText('seen-by-both');
    await watch.waitText('seen-by-both');
    expect(fx.registry.get(r.id).claim).toEqual({ kind: 'client', clientId: 'owner' });
    const listed = (await other.listTerminals('local')).find((t) => t.id === r.id);
    expect(listed?.owner).toBe('client:owner');
    await owner.shutdown(r.id, { immediate: true });
    expect(fx.registry.find(r.id)).toBeUndefined();
  });

  it('resumes exactly across a relay restart (same port, same daemon), typed input applied once', async () => {
    const c = fx.client({ clientId: 'survivor', reconnect: { steps: [50, 100, 200] } });
    const resets: PtyReattachEvent[] = [];
    c.onReattach?.((e) => resets.push(e));
    const { r, out } = await open(c, 'bash', [
      '-c',
      'stty -echo; echo READY; while read l; do echo "got:$l"; done',
    ]);
    await out.waitText('READY');
    await c.write(r.id, 'before\r');
    await out.waitText('got:before');
    const firstInstance = c.serverInstanceId;
    const restarting = fx.restart({ downMs: 500 });
    await waitFor(() => c.linkState.state === 'reconnecting');
    const typed = c.write(r.id, 'while-down\r');
    await restarting;
    await typed;
    await out.waitText('got:while-down\r\n');
    expect(c.serverInstanceId).not.toBe(firstInstance);
    // The new relay adopted the terminal for this client.
    expect(fx.registry.get(r.id).claim).toEqual({ kind: 'client', clientId: 'survivor' });
    await c.write(r.id, 'after\r');
    await out.waitText('got:after\r\n');
    expect(out.text.split('got:while-down').length).toBe(2);
    expect(out.gaps).toEqual([]);
    expect(resets).toEqual([]);
    await c.shutdown(r.id, { immediate: true });
  });

  it('input in flight when its relay went away is resent to the next relay process and applied once', async () => {
    const c = viaProxy('switcher');
    const { r, out } = await open(c, 'bash', [
      '-c',
      'stty -echo; echo READY; while read l; do echo "got:$l"; done',
    ]);
    await out.waitText('READY');
    const watcher = fx.client({ clientId: 'switch-watcher' });
    const watch = new OutputCollector(watcher);
    watch.bind((await watcher.attach(r.id)).id);
    // The line reaches relay A and the daemon applies it; A's acknowledgement is still on its way
    // back (300 ms each way) when the client's socket is cut and A goes away for good.
    proxy.delay(300);
    const typed = c.write(r.id, 'in-flight\r');
    await watch.waitText('got:in-flight');
    const firstInstance = c.serverInstanceId;
    proxy.cut();
    proxy.restore();
    proxy.refuse(true);
    await fx.restart({ downMs: 100 });
    proxy.refuse(false);
    // Relay B has no record of the frame: the client resends it marked as such, B forwards it with
    // its origin, and the daemon, which applied it through A, acknowledges it without typing it.
    await typed;
    expect(c.serverInstanceId).not.toBe(firstInstance);
    await c.write(r.id, 'after\r');
    await out.waitText('got:after\r\n');
    expect(out.text.split('got:in-flight').length).toBe(2);
    expect(out.gaps).toEqual([]);
    await c.shutdown(r.id, { immediate: true });
  });

  it('rejects a wrong token without retrying', async () => {
    const c = new RelayClient({ url: fx.url, token: `${TEST_TOKEN}-wrong` });
    const err = await c.connect().catch((e) => e);
    expect(isPtyRelayError(err, 'AUTH_FAILED')).toBe(true);
    expect(c.linkState.state).toBe('lost');
    await c.dispose();
  });
});

describe('backpressure of the ptyrelay extension (provider with consumer-driven credit)', () => {
  let fx: RelayFixture;
  let proxy: FaultProxy;
  beforeAll(async () => {
    fx = await startRelay({ manualAck: true });
    proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port });
  });
  afterAll(async () => {
    await proxy?.close();
    await fx?.cleanup();
  });

  it('a slow WebSocket pauses the PTY instead of buffering without bound, then everything arrives exactly', async () => {
    const c = fx.client({ url: `ws://127.0.0.1:${proxy.port}` });
    const N = 5_000_000; // about 44 MB of output (digits of 1..N plus \r\n per line)
    const total = 33_888_896 + 2 * N;
    const out = new OutputCollector(c);
    const r = await c.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['-c', `stty -echo; echo READY; read go; seq 1 ${N}; read end`],
    });
    out.bind(r.id);
    let produced = 0;
    fx.router.providerFor('local').onData((e) => {
      if (e.id === r.id) produced = Math.max(produced, e.seq + e.data.length);
    });
    await out.waitText('READY');
    const start = out.nextSeq;
    proxy.throttle(256 * 1024);
    await c.write(r.id, 'go\r');
    await new Promise((res) => setTimeout(res, 2500));
    // Without withheld credit the whole stream would have been produced (and buffered) by now.
    const atCheck = produced - start;
    expect(atCheck).toBeGreaterThan(0);
    expect(atCheck).toBeLessThan(25 * 1024 * 1024);
    proxy.restore();
    await waitFor(() => out.nextSeq - start >= total, 60_000, 'the whole stream');
    expect(out.nextSeq - start).toBe(total);
    expect(out.gaps).toEqual([]);
    const tail = out.bytes.subarray(out.bytes.length - 40).toString();
    expect(tail.endsWith(`${N - 1}\r\n${N}\r\n`)).toBe(true);
    await c.shutdown(r.id, { immediate: true });
  }, 90_000);

  it('a manualAck client holds the PTY at the credit window until it acknowledges', async () => {
    const c = fx.client({ manualAck: true });
    const N = 1_000_000;
    let total = 0;
    for (let i = 1; i <= N; i++) total += String(i).length + 2;
    const out = new OutputCollector(c);
    const r = await c.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['-c', `stty -echo; echo READY; read go; seq 1 ${N}; read end`],
    });
    out.bind(r.id);
    await out.waitText('READY');
    c.acknowledgeDataEvent(r.id, out.nextSeq);
    const start = out.nextSeq;
    await c.write(r.id, 'go\r');
    await new Promise((res) => setTimeout(res, 1000));
    // Nothing acknowledged: the stub stops at its window (256 KiB) instead of sending ~8 MB.
    const held = out.nextSeq - start;
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThan(2 * 1024 * 1024);
    c.onData((e) => {
      if (e.id === r.id) c.acknowledgeDataEvent(e.id, e.data.length);
    });
    c.acknowledgeDataEvent(r.id, held);
    await waitFor(() => out.nextSeq - start >= total, 30_000, 'the whole stream');
    expect(out.nextSeq - start).toBe(total);
    expect(out.gaps).toEqual([]);
    await c.shutdown(r.id, { immediate: true });
  });
});
