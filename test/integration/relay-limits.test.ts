import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RelayClient } from '../../provider/client/relay-client.js';
import { isPtyRelayError, type PtyRelayError } from '../../provider/errors.js';
import { OutputCollector } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';

/**
 * Every relay limit crossed once (docs/config.md, `limits`): the crossing gets its typed error and
 * a healthy terminal of another client on the same relay keeps echoing.
 */
describe('relay limits', () => {
  let fx: RelayFixture;
  let healthy: RelayClient;
  let healthyOut: OutputCollector;
  let healthyId: string;
  let round = 0;

  const limits = {
    maxTerminalsPerClient: 2,
    maxTerminalsPerHost: 4,
    maxInputBytes: 4096,
    maxConnections: 4,
    maxMessageBytes: 64 * 1024,
  };

  async function open(c: RelayClient) {
    const r = await c.spawn({ cols: 80, rows: 24, command: 'cat', env: { HOME: fx.local.home } });
    return r.id;
  }

  async function stillEchoes(): Promise<void> {
    const marker = `healthy-${++round}`;
    await healthy.write(healthyId, `${marker}\n`);
    await healthyOut.waitText(marker);
  }

  async function rejection(p: Promise<unknown>): Promise<PtyRelayError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isPtyRelayError(err, 'LIMIT_EXCEEDED'), String(err)).toBe(true);
    return err as PtyRelayError;
  }

  beforeAll(async () => {
    fx = await startRelay({ limits });
    healthy = fx.client({ clientId: 'healthy' });
    healthyOut = new OutputCollector(healthy);
    healthyId = await open(healthy);
    healthyOut.bind(healthyId);
    await stillEchoes();
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it('terminals per client, then per host', async () => {
    const busy = fx.client({ clientId: 'busy' });
    await open(busy);
    await open(busy);
    const err = await rejection(open(busy));
    expect(err.details).toMatchObject({ limit: 'maxTerminalsPerClient', max: 2 });
    await stillEchoes();
    // healthy 1 + busy 2 + other 1 = 4 on `local`: other may not add a fifth.
    const other = fx.client({ clientId: 'other' });
    await open(other);
    const host = await rejection(open(other));
    expect(host.details).toMatchObject({ limit: 'maxTerminalsPerHost', max: 4 });
    await stillEchoes();
  });

  it('input bytes per write', async () => {
    const err = await rejection(healthy.write(healthyId, 'x'.repeat(limits.maxInputBytes + 1)));
    expect(err.details).toMatchObject({ limit: 'maxInputBytes' });
    expect(healthyOut.text).not.toContain('x'.repeat(64));
    await stillEchoes();
  });

  it('WebSocket message size: the oversized connection is closed (1009), others are not', async () => {
    const ws = new WebSocket(fx.url, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.on('error', () => undefined); // ws reports the 1009 close as an error too; the code is checked.
    ws.send('x'.repeat(limits.maxMessageBytes + 1));
    expect(await closed).toBe(1009);
    await stillEchoes();
  });

  it('WebSocket connections per relay', async () => {
    // healthy, busy, other are open: one more fits, the one after is refused.
    const fourth = fx.client({ clientId: 'fourth' });
    await fourth.listProcesses();
    const fifth = fx.client({ clientId: 'fifth', reconnect: { connectAttempts: 1 } });
    const err = await rejection(fifth.listProcesses());
    expect(err.details).toMatchObject({ limit: 'maxConnections' });
    await stillEchoes();
  });
});
