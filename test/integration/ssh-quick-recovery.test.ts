import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LinkState } from '../../provider/contract.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { type ProxiedHost, startProxiedHost } from '../support/proxied-host.js';
import { sshdAvailable } from '../support/sshd.js';

const available = sshdAvailable();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The promise: the next attempt within 2 s of the host's return, whatever came before. */
const RECOVERY_BOUND_MS = 2000;
/** Long enough that the ladder alone (0.25 s for 5 s, then 1, 2, 5, 10 s ±20 %) would wait well past the bound. */
const SECOND_OUTAGE_MS = 16_000;

describe.skipIf(!available)('quick recovery after repeated outages', () => {
  let fx: ProxiedHost;
  const attempts: number[] = [];
  const states: { at: number; s: LinkState }[] = [];

  beforeAll(async () => {
    fx = await startProxiedHost(
      'quick',
      {},
      {
        onProgress: (_h, p) => {
          if (p.step === 'connect') attempts.push(Date.now());
        },
      },
    );
    fx.provider.onLinkState((e) => states.push({ at: Date.now(), s: e.state }));
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  /** The host refuses connections (accepts and resets, like a host whose sshd is gone) for `ms`. */
  async function outage(ms: number): Promise<number> {
    fx.proxy.refuse(true);
    fx.proxy.cut();
    await sleep(ms);
    const back = Date.now();
    fx.proxy.restore();
    await waitFor(() => states.at(-1)?.s.state === 'connected', 10_000);
    return back;
  }

  it('schedules the next attempt within 2 s of the host coming back, after two outages', async () => {
    const p = fx.provider;
    const out = new OutputCollector(p);
    const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'bash' });
    out.bind(r.id);
    await p.write(r.id, 'echo up-$((1+1))\r');
    await out.waitText('up-2');

    await outage(3000);
    await p.write(r.id, 'echo first-$((2+2))\r');
    await out.waitText('first-4');
    await sleep(2000);

    const outageStart = Date.now();
    const back = await outage(SECOND_OUTAGE_MS);
    const next = attempts.find((t) => t >= back);
    expect(next, 'an attempt after the host came back').toBeDefined();
    expect(next! - back).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    // The ladder alone had the next attempt much later: the probe is what brought it forward.
    const last = states.filter((x) => x.at < back && x.s.state === 'reconnecting').at(-1)!;
    const ladderNext = last.at + (last.s as { nextInMs: number }).nextInMs;
    expect(ladderNext - back).toBeGreaterThan(RECOVERY_BOUND_MS);
    console.info(
      `quick recovery: attempt ${next! - back} ms after the host came back (ladder alone: ${ladderNext - back} ms)`,
    );
    // Every reconnecting state of the outage says why: the host refused (sshd gone).
    const during = states.filter((x) => x.at >= outageStart && x.at < back && x.s.state === 'reconnecting');
    expect(during.length).toBeGreaterThan(0);
    for (const x of during) expect((x.s as { cause?: string }).cause).toBe('sshd');
    expect(during.map((x) => (x.s as { lastError?: string }).lastError).join('\n')).not.toMatch(
      /closed by the relay/,
    );

    await p.write(r.id, 'echo second-$((3+3))\r');
    await out.waitText('second-6');
    await p.shutdown(r.id);
  }, 60_000);
});
