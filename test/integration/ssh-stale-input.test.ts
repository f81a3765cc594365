import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LinkState } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { type ProxiedHost, startProxiedHost } from '../support/proxied-host.js';
import { sshdAvailable } from '../support/sshd.js';

const available = sshdAvailable();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** input.maxQueueAgeMs of this test's relay. */
const MAX_AGE_MS = 2000;

describe.skipIf(!available)('input typed during an outage ages out', () => {
  let fx: ProxiedHost;
  let state: LinkState = { state: 'idle' };

  beforeAll(async () => {
    fx = await startProxiedHost('stale', {}, { link: { maxInputAgeMs: MAX_AGE_MS } });
    fx.provider.onLinkState((e) => {
      state = e.state;
    });
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  /** Cuts the host off (refused) and waits until the provider knows the link is down. */
  async function goDown(): Promise<void> {
    fx.proxy.refuse(true);
    fx.proxy.cut();
    await waitFor(() => state.state === 'reconnecting', 5000);
  }
  async function comeBack(): Promise<void> {
    fx.proxy.restore();
    await waitFor(() => state.state === 'connected', 10_000);
  }

  it('drops input older than maxQueueAgeMs and applies younger input exactly once', async () => {
    const p = fx.provider;
    const out = new OutputCollector(p);
    const r = await p.spawn({ host: 'h', cols: 80, rows: 24, command: 'bash' });
    out.bind(r.id);
    await p.write(r.id, 'echo ready-$((2*3))\r');
    await out.waitText('ready-6');

    // A 4 s outage: what was typed at its start is 4 s old when the host returns.
    await goDown();
    const stale = p.write(r.id, 'echo stale-$((5*7))\r');
    const staleResult = stale.then(
      () => 'applied',
      (e: unknown) => e,
    );
    await sleep(4000);
    const err = await staleResult;
    // The sender hears it while the outage lasts (the queue ages its input), before any resend.
    expect(err).toBeInstanceOf(PtyRelayError);
    expect((err as PtyRelayError).code).toBe('INPUT_EXPIRED');
    expect((err as PtyRelayError).details).toMatchObject({ reason: 'age', bytes: 20 });
    await comeBack();

    // A 1 s outage: its input is young enough and is applied once.
    await goDown();
    const fresh = p.write(r.id, 'echo fresh-$((6*7))\r').then(
      () => 'applied',
      (e: unknown) => e,
    );
    await sleep(1000);
    await comeBack();
    expect(await fresh).toBe('applied');
    await out.waitText('fresh-42');
    await p.write(r.id, 'echo done-$((4*4))\r');
    await out.waitText('done-16');
    expect(out.text.split('stale-35').length - 1).toBe(0);
    expect(out.text.split('fresh-42').length - 1).toBe(1);
    await p.shutdown(r.id);
  }, 60_000);
});
