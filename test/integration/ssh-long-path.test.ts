import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyExitEvent } from '../../provider/contract.js';
import { waitFor } from '../support/local-daemon.js';
import { type ProxiedHost, startProxiedHost } from '../support/proxied-host.js';
import { sshdAvailable } from '../support/sshd.js';
import { expectedStream, writeGenerator } from '../support/stream-generator.js';

const available = sshdAvailable();

const SEED = 11;
const BYTES = 16 * 1024 * 1024;
/** Each way: an 80 ms round trip, like a link across a continent. */
const ONE_WAY_MS = 40;
const PATH_RATE = 8_000_000;
/** What a fixed 256 KiB credit window allows over this round trip: one window per round trip. */
const FIXED_WINDOW_CAP = (256 * 1024) / ((2 * ONE_WAY_MS) / 1000);
/**
 * The rate is taken over the best span this long: a fixed window cannot beat its cap over a
 * dozen round trips either, while a busy machine (a full test run on 2 cores) can slow parts of
 * the stream that the window has nothing to do with (the generator, the consumer).
 */
const SPAN_MS = 1000;

describe.skipIf(!available)('a flood over a long, narrow SSH path', () => {
  let fx: ProxiedHost;

  beforeAll(async () => {
    fx = await startProxiedHost('longpath');
    fx.proxy.delay(ONE_WAY_MS);
    fx.proxy.throttle(PATH_RATE);
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('grows the credit window past one round trip of 256 KiB and stays byte-exact', async () => {
    const { provider, dir } = fx;
    const hash = createHash('sha256');
    let bytes = 0;
    let nextSeq = 0;
    let gaps = 0;
    let id = '';
    let quarterAt = 0;
    /** (time, bytes so far) at each chunk. */
    const marks: { t: number; bytes: number }[] = [];
    const exits: PtyExitEvent[] = [];
    provider.onData((e) => {
      if (e.id !== id) return;
      if (e.seq !== nextSeq) gaps++;
      nextSeq = e.seq + e.data.length;
      hash.update(e.data);
      bytes += e.data.length;
      const t = performance.now();
      if (!quarterAt && bytes >= BYTES / 4) quarterAt = t;
      marks.push({ t, bytes });
    });
    provider.onExit((e) => exits.push(e));
    const r = await provider.spawn({
      host: 'h',
      cols: 120,
      rows: 30,
      command: 'node',
      args: [writeGenerator(dir), String(SEED), String(BYTES), '0'],
    });
    id = r.id;
    const exp = expectedStream(SEED, BYTES);
    await waitFor(() => bytes >= exp.bytes, 60_000, 'the whole stream');
    await waitFor(() => exits.some((e) => e.id === id), 10_000, 'the generator to exit');
    expect({ gaps, bytes }).toEqual({ gaps: 0, bytes: exp.bytes });
    expect(hash.digest('hex')).toBe(exp.sha256);

    // After the first quarter (the window had time to open up): the best rate over SPAN_MS.
    let rate = 0;
    const after = marks.filter((m) => m.t >= quarterAt);
    for (let a = 0, b = 0; a < after.length; a++) {
      while (b < after.length && after[b].t - after[a].t < SPAN_MS) b++;
      if (b === after.length) break;
      rate = Math.max(rate, ((after[b].bytes - after[a].bytes) / (after[b].t - after[a].t)) * 1000);
    }
    console.log(
      `long path (${2 * ONE_WAY_MS} ms RTT, ${PATH_RATE / 1e6} MB/s): best ${SPAN_MS} ms ${(rate / 1e6).toFixed(1)} MB/s; ` +
        `a fixed 256 KiB window allows ${(FIXED_WINDOW_CAP / 1e6).toFixed(1)} MB/s`,
    );
    expect(rate).toBeGreaterThan(FIXED_WINDOW_CAP * 1.5);
  }, 90_000);
});
