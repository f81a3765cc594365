import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayClient } from '../../provider/client/relay-client.js';
import type { PtyDataEvent } from '../../provider/contract.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay } from '../support/relay-fixture.js';
import { StreamFollower, seqBytes, seqSha256 } from '../support/stream-follower.js';

/**
 * A consumer whose socket keeps falling behind while the program floods: each time it lags, the
 * relay stops sending to it, and when it drained it resumes from the host's history at the seq it
 * reached — from the daemon's log once that seq left the RAM tail. Output that was still on its
 * way during the resume must not leave a hole, and the credit handed back must keep the program
 * running (issue 19: the bench's flood through the relay jumped, then stalled for good).
 */
const N = 5_000_000;
const TOTAL = seqBytes(N);
const SHA = seqSha256(N);
/** Every byte of the flood from `start`, exactly once, in order, with no reset. */
function expectWholeStream(f: StreamFollower, start: number): void {
  expect(f.gaps).toEqual([]);
  expect(f.resets).toBe(0);
  expect(f.next - start).toBe(TOTAL);
  expect(f.digest()).toBe(SHA);
}

/** Stall/restore cycles at most (each under 0.3 s); the flood needs a few dozen. */
const MAX_CYCLES = 400;
/**
 * Stall and run lengths (ms) the cycles walk through: short stalls make the consumer lag and
 * drain again while the daemon is still sending its window, so output is on its way while the
 * resume's attach is in flight; long ones let the daemon pause the program.
 */
const STALL_MS = [400, 150, 700, 250, 500, 120];
const RUN_MS = [30, 100, 10, 60, 5, 40];

async function spawnFlood(c: RelayClient, follow: StreamFollower): Promise<{ id: string; start: number }> {
  let id: string | undefined;
  let start = -1;
  const early: PtyDataEvent[] = [];
  const take = (e: PtyDataEvent) => {
    follow.take(e);
    if (start < 0 && Buffer.from(e.data).includes('READY\r\n')) start = follow.next;
  };
  c.onData((e) => {
    if (id === undefined) early.push(e);
    else if (e.id === id) take(e);
  });
  c.onReattach((e) => e.id === id && follow.reset(e));
  const r = await c.spawn({
    cols: 80,
    rows: 24,
    command: 'bash',
    args: ['-c', `stty -echo; echo READY; read go; seq 1 ${N}; read end`],
  });
  id = r.id;
  if (r.replay && r.replay.length > 0)
    take({
      id,
      incarnationId: r.incarnationId,
      seq: r.providerSequence.value - r.replay.length,
      data: r.replay,
    });
  for (const e of early.splice(0)) if (e.id === id) take(e);
  await waitFor(() => start >= 0, 15_000, 'READY');
  follow.startAt(start);
  return { id, start };
}

/** Stalls and restores the proxy until `done`, within MAX_CYCLES; returns the cycles run. */
async function flapUntil(proxy: FaultProxy, done: () => boolean): Promise<number> {
  let cycles = 0;
  while (!done() && cycles < MAX_CYCLES) {
    cycles++;
    proxy.stall();
    await new Promise((r) => setTimeout(r, STALL_MS[cycles % STALL_MS.length]));
    proxy.restore();
    await new Promise((r) => setTimeout(r, RUN_MS[cycles % RUN_MS.length]));
  }
  return cycles;
}

describe('a consumer that lags during a flood resumes exactly (real relay, local daemon)', () => {
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

  it('alone: every lag and resume continues the stream byte for byte, and the program finishes', async () => {
    const flaky = fx.client({ url: `ws://127.0.0.1:${proxy.port}` });
    const follow = new StreamFollower();
    const { id, start } = await spawnFlood(flaky, follow);
    await flaky.write(id, 'go\r');
    const done = () => follow.next - start >= TOTAL;
    const cycles = await flapUntil(proxy, done);
    await waitFor(done, 60_000, 'the whole stream after the last stall');
    expect(cycles).toBeGreaterThan(2);
    expectWholeStream(follow, start);
    await flaky.shutdown(id, { immediate: true });
  }, 150_000);

  it('beside a reader that keeps up: both get every byte, and the lagging one never stalls the program', async () => {
    const reader = fx.client();
    const mine = new StreamFollower();
    const { id, start } = await spawnFlood(reader, mine);
    const flaky = fx.client({ url: `ws://127.0.0.1:${proxy.port}` });
    const theirs = new StreamFollower();
    flaky.onData((e) => e.id === id && theirs.take(e));
    flaky.onReattach((e) => e.id === id && theirs.reset(e));
    const at = await flaky.attach(id, { fromSeq: start });
    theirs.next = at.providerSequence.value;
    theirs.startAt(start);
    await reader.write(id, 'go\r');
    const done = () => theirs.next - start >= TOTAL && mine.next - start >= TOTAL;
    await flapUntil(proxy, done);
    await waitFor(done, 60_000, 'both consumers to get the whole stream');
    expectWholeStream(mine, start);
    expectWholeStream(theirs, start);
    await reader.shutdown(id, { immediate: true });
  }, 150_000);
});
