import { afterEach, describe, expect, it } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { capturedLog } from '../support/captured-log.js';
import { waitFor } from '../support/local-daemon.js';
import { type ProxiedHost, startProxiedHost } from '../support/proxied-host.js';
import { sshdAvailable } from '../support/sshd.js';

const available = sshdAvailable();
if (!available) console.warn('skipping the link warm-up test: /usr/sbin/sshd is not installed');

/** Raw mode without echo: every byte typed comes back exactly once, from cat. */
const RAW_CAT = 'stty raw -echo; printf READY; exec cat';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rawCat(p: SshPtyProvider): Promise<{ id: string; text: () => string }> {
  let text = '';
  let id = '';
  const early: string[] = [];
  p.onData((e) => {
    const s = Buffer.from(e.data).toString('latin1');
    if (!id) early.push(s);
    else if (e.id === id) text += s;
  });
  const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'sh', args: ['-c', RAW_CAT] });
  id = r.id;
  text = (r.replay ? Buffer.from(r.replay).toString('latin1') : '') + early.join('');
  await waitFor(() => text.includes('READY'), 15_000, 'READY');
  return { id, text: () => text };
}

/** The relay's first "link warm-up" record, once logged. */
const warmUpRecord = (lines: () => Record<string, unknown>[]) =>
  lines().find((l) => l.msg === 'link warm-up') as { pings: number; end: string; ms: number } | undefined;

/**
 * A fresh relay puts a run of stub pings through its first SSH link before anyone types, so V8's
 * first compiles of ssh2's transport happen then (relay/ssh/link-warm-up.ts).
 */
describe.skipIf(!available)('SSH link warm-up', () => {
  let fx: ProxiedHost | undefined;
  afterEach(async () => {
    await fx?.cleanup();
    fx = undefined;
  });

  it('sends its pings one at a time, each a packet of its own each way, up to the budget', async () => {
    const budget = { left: 300 };
    const captured = capturedLog();
    fx = await startProxiedHost('warmup', {}, { warmUp: budget, log: captured.log });
    const s0 = fx.proxy.stats();
    await rawCat(fx.provider);
    const rec = await waitFor(() => warmUpRecord(captured.lines), 10_000, 'the warm-up record');
    expect(rec).toMatchObject({ pings: 300, end: 'done' });
    expect(budget.left).toBe(0);
    const s1 = fx.proxy.stats();
    const packets = fx.provider.linkInfo('h')!.packets;
    // One ping per write of the relay and per segment through the hop (plus the handshake, the
    // deploy probe and the spawn), one pong per SSH packet back.
    expect(packets.sent).toBeGreaterThanOrEqual(300);
    expect(packets.received).toBeGreaterThanOrEqual(300);
    expect(s1.readsUp - s0.readsUp).toBeGreaterThanOrEqual(300);
  });

  it('ends as soon as the link carries input, and no ping follows the keys', async () => {
    const budget = { left: 1_000_000 };
    const captured = capturedLog();
    fx = await startProxiedHost('warmup-busy', {}, { warmUp: budget, log: captured.log });
    // 20 ms round trips: the run would take its full 2 s were nobody typing.
    fx.proxy.delay(10);
    const r = await fx.provider.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    await fx.provider.write(r.id, 'k');
    const rec = await waitFor(() => warmUpRecord(captured.lines), 5000, 'the warm-up record');
    expect(rec.end).toBe('busy');
    expect(rec.pings).toBeGreaterThan(0);
    await sleep(300);
    expect(1_000_000 - budget.left).toBe(rec.pings);
  });

  it('ends at once when the link drops under it (the ping in flight fails, it does not hang)', async () => {
    const budget = { left: 1_000_000 };
    const captured = capturedLog();
    fx = await startProxiedHost('warmup-drop', {}, { warmUp: budget, log: captured.log });
    fx.proxy.delay(10);
    await fx.provider.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
    fx.proxy.cut();
    const rec = await waitFor(() => warmUpRecord(captured.lines), 5000, 'the warm-up record');
    expect(rec.end).toBe('closed');
    expect(rec.ms).toBeLessThan(2000);
  });
});
