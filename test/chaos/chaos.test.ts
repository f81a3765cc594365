import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyExitEvent, PtyReattachEvent } from '../../provider/contract.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import type { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type ProxiedHost, startProxiedHost } from '../support/proxied-host.js';
import { sshdAvailable } from '../support/sshd.js';
import { expectedStream, writeGenerator } from '../support/stream-generator.js';

const available = sshdAvailable();

const SESSIONS = 5;
const BYTES_PER_SESSION = 8 * 1024 * 1024;
const RATE = 200 * 1024;
const FAULTS = Number(process.env.CHAOS_FAULTS ?? 30);

/** Seeded PRNG so a failing schedule can be replayed. */
function prng(seed: number) {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x / 0x7fffffff;
  };
}

interface Consumer {
  hash: ReturnType<typeof createHash>;
  bytes: number;
  nextSeq: number;
  gaps: number;
  resets: number;
  tail: string;
}

describe.skipIf(!available)('chaos: a flaky link between relay and sshd', () => {
  let fx: ProxiedHost;
  let proxy: FaultProxy;
  let provider: SshPtyProvider;
  let dir: string;

  beforeAll(async () => {
    fx = await startProxiedHost(
      'chaos',
      { connectTimeoutMs: 3000, keepaliveIntervalMs: 1000 },
      { link: { health: { deadAfterMs: 2000, probeIdleMs: 500 }, ladder: { steps: [100, 250, 500, 1000] } } },
    );
    ({ proxy, provider, dir } = fx);
  });

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('delivers every stream byte-exact (or with an explicit reset) through ~30 faults', async () => {
    const generator = writeGenerator(dir);
    const consumers = new Map<string, Consumer>();
    const exits: PtyExitEvent[] = [];
    const resets: PtyReattachEvent[] = [];
    provider.onData((e) => {
      const c = consumers.get(e.id);
      if (!c) return;
      if (e.seq !== c.nextSeq) c.gaps++;
      c.nextSeq = e.seq + e.data.length;
      c.hash.update(e.data);
      c.bytes += e.data.length;
      c.tail = (c.tail + Buffer.from(e.data).toString('latin1')).slice(-400);
    });
    provider.onExit((e) => exits.push(e));
    provider.onReattach?.((e) => {
      resets.push(e);
      const c = consumers.get(e.id);
      if (c && e.generation === 'reset') c.resets++;
    });
    const ids: { id: string; seed: number }[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const seed = 1000 + i;
      const r = await provider.spawn({
        host: 'h',
        cols: 120,
        rows: 30,
        command: 'node',
        args: [generator, String(seed), String(BYTES_PER_SESSION), String(RATE)],
      });
      consumers.set(r.id, { hash: createHash('sha256'), bytes: 0, nextSeq: 0, gaps: 0, resets: 0, tail: '' });
      ids.push({ id: r.id, seed });
    }

    const rnd = prng(42);
    const kinds: string[] = [];
    for (let f = 0; f < FAULTS; f++) {
      const pick = rnd();
      if (pick < 0.35) {
        kinds.push('cut');
        proxy.cut();
      } else if (pick < 0.7) {
        const ms = 1000 + Math.floor(rnd() * 4000);
        kinds.push(`blackhole ${ms}`);
        proxy.blackhole();
        await new Promise((r) => setTimeout(r, ms));
        proxy.restore();
      } else {
        const ms = 100 + Math.floor(rnd() * 400);
        kinds.push(`delay ${ms}`);
        proxy.delay(ms);
        await new Promise((r) => setTimeout(r, 1000));
        proxy.restore();
      }
      await new Promise((r) => setTimeout(r, 300 + Math.floor(rnd() * 700)));
    }
    proxy.restore();

    await waitFor(
      () => ids.every(({ id }) => exits.some((e) => e.id === id)),
      120_000,
      'all generators to exit',
    );
    // Exit and the last bytes travel separately; give the tail a moment before comparing.
    await waitFor(
      () =>
        ids.every(
          ({ id, seed }) => consumers.get(id)!.bytes >= expectedStream(seed, BYTES_PER_SESSION).bytes,
        ),
      5000,
      'the last bytes',
    ).catch(() => {});
    for (const { id, seed } of ids) {
      const c = consumers.get(id)!;
      const exp = expectedStream(seed, BYTES_PER_SESSION);
      expect(exits.filter((e) => e.id === id)).toHaveLength(1);
      expect({
        id,
        exit: exits.find((e) => e.id === id)?.exitCode,
        tail: c.tail,
      }).toMatchObject({ exit: 0 });
      if (c.resets === 0) {
        expect({ id, gaps: c.gaps, bytes: c.bytes }).toEqual({ id, gaps: 0, bytes: exp.bytes });
        expect(c.hash.digest('hex')).toBe(exp.sha256);
      } else {
        // An explicit reset is allowed; then the model's screen must end with the stream's last line.
        const snap = await provider.getBufferSnapshot(id);
        expect(snap.data).toContain(exp.lastLine);
      }
    }
    console.log(
      `chaos: ${kinds.length} faults (${kinds.join(', ')}); reattach events ${JSON.stringify(
        resets.map((r) => ({
          id: r.id,
          generation: r.generation,
          expired: r.sessionExpired,
          seq: r.snapshot?.seq,
        })),
      )}`,
    );
  }, 240_000);
});
