import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyBackgroundStreamEvent, PtyDataEvent } from '../../provider/contract.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { open } from '../support/relay-test-support.js';

/** Bytes of `seq 1 n` with CRLF line ends (the PTY's onlcr). */
function seqBytes(n: number): number {
  let total = 0;
  for (let i = 1; i <= n; i++) total += String(i).length + 2;
  return total;
}

const isMarker = (e: PtyBackgroundStreamEvent, background: boolean) =>
  e.type === 'backgroundMarker' && e.background === background;

/**
 * The stub thins a terminal per relay link, and every consumer of a relay shares that link:
 * the relay puts a terminal in the background only when every viewer asked for it (issue 15:
 * a hidden web tab thinned what a CLI viewer of the same terminal read).
 */
describe('background is decided by every viewer of a terminal (real relay and PTYs)', () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await startRelay();
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('one viewer hiding a terminal leaves it whole for another; once that one leaves, it is thinned', async () => {
    const N = 200_000;
    const owner = fx.client();
    const viewer = fx.client();
    const r = await owner.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['-c', `stty -echo; echo READY; read go; seq 1 ${N}; echo DONE; read end`],
    });
    const ownerEvents: PtyBackgroundStreamEvent[] = [];
    const viewerEvents: PtyBackgroundStreamEvent[] = [];
    owner.onBackgroundStreamEvent((e) => e.id === r.id && ownerEvents.push(e));
    viewer.onBackgroundStreamEvent((e) => e.id === r.id && viewerEvents.push(e));
    let next = -1;
    let gaps = 0;
    viewer.onData((e: PtyDataEvent) => {
      if (e.id !== r.id) return;
      if (next >= 0 && e.seq > next) gaps++;
      next = Math.max(next, e.seq + e.data.length);
    });
    const at = await viewer.attach(r.id, { fromSeq: 0 });
    next = Math.max(next, at.providerSequence.value);
    await waitFor(() => next > 0, 15_000, 'READY');
    const start = next;

    await owner.setPtyBackgrounded(r.id, true);
    await owner.write(r.id, 'go\r');
    // The viewer still watches: it gets every byte, no gap, no background marker.
    const total = seqBytes(N) + 'DONE\r\n'.length;
    await waitFor(() => next - start >= total, 60_000, 'the viewer to get the whole stream');
    expect(next - start).toBe(total);
    expect(gaps).toBe(0);
    expect(viewerEvents.filter((e) => isMarker(e, true) || e.type === 'dataGap')).toEqual([]);
    expect(ownerEvents.filter((e) => isMarker(e, true))).toEqual([]);

    // The other viewer leaves: every remaining viewer wants the background now.
    await viewer.detach(r.id);
    await waitFor(
      () => ownerEvents.some((e) => isMarker(e, true)),
      10_000,
      'the terminal to go to the background',
    );

    // Shown again: the marker comes with the screen to restart from.
    await owner.setPtyBackgrounded(r.id, false);
    await waitFor(
      () =>
        ownerEvents.some((e) => e.type === 'backgroundMarker' && !e.background && e.snapshot !== undefined),
      10_000,
      'the terminal to come back with a snapshot',
    );
    await owner.shutdown(r.id, { immediate: true });
  }, 120_000);

  it('an AHP subscriber keeps a terminal whole that its owner put in the background', async () => {
    const N = 100_000;
    const owner = fx.client();
    // Listening before the spawn: READY may come in the same read as its reply.
    const readyIds = new Set<string>();
    const ends = new Map<string, number>();
    owner.onData((e) => {
      ends.set(e.id, Math.max(ends.get(e.id) ?? -1, e.seq + e.data.length));
      if (Buffer.from(e.data).includes('READY')) readyIds.add(e.id);
    });
    const r = await owner.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      // READY once echo is off: typed before it, `a\r` would be echoed into the counted stream.
      args: ['-c', `stty -echo; echo READY; read a; seq 1 ${N}; read b; seq 1 ${N}; read end`],
    });
    const events: PtyBackgroundStreamEvent[] = [];
    owner.onBackgroundStreamEvent((e) => e.id === r.id && events.push(e));
    const end = () => Math.max(ends.get(r.id) ?? -1, r.providerSequence.value);
    const ready = () => readyIds.has(r.id) || Buffer.from(r.replay ?? []).includes('READY');
    await waitFor(ready, 10_000, 'the shell with echo off');
    await owner.setPtyBackgrounded(r.id, true);
    await waitFor(() => events.some((e) => isMarker(e, true)), 10_000, 'the background marker');

    const peer = await open(fx.url, { token: TEST_TOKEN });
    await peer.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'watcher' });
    await peer.request('subscribe', { channel: `ptyrelay-terminal:/${r.id}` });
    // Watched over AHP: the owner's wish no longer thins the stream; every byte reaches it.
    const seen = events.length;
    const from = end();
    await owner.write(r.id, 'a\r');
    await waitFor(() => end() - from >= seqBytes(N), 30_000, 'the whole first stream');
    expect(end() - from).toBe(seqBytes(N));
    expect(events.slice(seen).filter((e) => e.type === 'dataGap')).toEqual([]);

    // The subscriber leaves: the owner's wish holds again and the next flood is thinned.
    peer.close();
    await waitFor(() => events.slice(seen).some((e) => isMarker(e, true)), 10_000, 'back to the background');
    await owner.write(r.id, 'b\r');
    await waitFor(() => events.slice(seen).some((e) => e.type === 'dataGap'), 30_000, 'a thinned flood');
    await owner.shutdown(r.id, { immediate: true });
  }, 90_000);
});
