/**
 * Hosts hold their terminals' owners (relay/terminals/host-owners.ts): two relays over one daemon
 * (a fleet's worth) agree on whose a terminal is, the first relay to adopt an unowned terminal
 * wins on the host, and after a relay restart a watcher that comes back first does not take a
 * terminal from its owner.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayClient } from '../../provider/client/relay-client.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay } from '../support/relay-fixture.js';

const ECHO_LOOP = ['-c', 'stty -echo; echo READY; while read l; do echo "got:$l"; done'];

describe('terminal owners kept by the host, across relays', () => {
  let fx: RelayFixture;
  let b: Awaited<ReturnType<RelayFixture['sibling']>>;

  beforeAll(async () => {
    fx = await startRelay();
    b = await fx.sibling();
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  async function open(c: RelayClient) {
    const out = new OutputCollector(c);
    const r = await c.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ECHO_LOOP,
      env: { HOME: fx.local.home },
    });
    out.bind(r.id);
    await out.waitText('READY');
    return { id: r.id, out };
  }

  it("a terminal claimed through relay A is its owner's on relay B: others watch, only the owner types", async () => {
    const owner = fx.client({ clientId: 'owner-a' });
    const { id, out } = await open(owner);
    const other = b.client({ clientId: 'other-b' });
    const watch = new OutputCollector(other);
    watch.bind((await other.attach(id)).id);
    expect(b.registry.get(id).claim).toEqual({ kind: 'client', clientId: 'owner-a' });
    const refused = await other.write(id, 'not-yours\r').catch((e) => e);
    expect(isPtyRelayError(refused, 'NOT_OWNER')).toBe(true);
    // The owner reaches the same terminal through relay B and may type there.
    const again = b.client({ clientId: 'owner-a' });
    const seen = new OutputCollector(again);
    seen.bind((await again.attach(id)).id);
    await again.write(id, 'via-b\r');
    await out.waitText('got:via-b');
    await watch.waitText('got:via-b');
    expect(out.text).not.toContain('got:not-yours');
    await owner.shutdown(id, { immediate: true });
  });

  it('the first relay to adopt an unowned terminal wins on the host; the other relay takes its owner', async () => {
    // Spawned on the daemon with no owner (as by a relay of an older build).
    const r = await fx.router
      .providerFor('local')
      .spawn({ cols: 80, rows: 24, command: 'bash', args: ECHO_LOOP });
    const first = b.client({ clientId: 'adopter-b' });
    const firstOut = new OutputCollector(first);
    firstOut.bind((await first.attach(r.id)).id);
    await first.write(r.id, 'mine\r');
    await firstOut.waitText('got:mine');
    const late = fx.client({ clientId: 'late-a' });
    await late.attach(r.id);
    await waitFor(() => fx.registry.find(r.id)?.claim.kind === 'client');
    expect(fx.registry.get(r.id).claim).toEqual({ kind: 'client', clientId: 'adopter-b' });
    const refused = await late.write(r.id, 'steal\r').catch((e) => e);
    expect(isPtyRelayError(refused, 'NOT_OWNER')).toBe(true);
    expect(firstOut.text).not.toContain('got:steal');
    await first.shutdown(r.id, { immediate: true });
  });

  it('after a relay restart, a watcher that re-attaches first does not take the terminal from its owner', async () => {
    // The owner reaches the relay through a proxy that keeps it away until the watcher is back.
    const proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port });
    try {
      const owner = fx.client({
        url: `ws://127.0.0.1:${proxy.port}`,
        clientId: 'keeper',
        reconnect: { steps: [50, 100] },
      });
      const { id, out } = await open(owner);
      const watcher = fx.client({ clientId: 'watcher', reconnect: { steps: [50, 100] } });
      watcher.onData(() => {});
      await watcher.attach(id);
      proxy.refuse(true);
      proxy.cut();
      await fx.restart({ downMs: 100 });
      await waitFor(() => watcher.linkState.state === 'connected' && fx.registry.find(id) !== undefined);
      await waitFor(() => fx.registry.get(id).claim.kind !== 'none');
      expect(fx.registry.get(id).claim).toEqual({ kind: 'client', clientId: 'keeper' });
      const refused = await watcher.write(id, 'taken\r').catch((e) => e);
      expect(isPtyRelayError(refused, 'NOT_OWNER')).toBe(true);
      proxy.refuse(false);
      await waitFor(() => owner.linkState.state === 'connected');
      await owner.write(id, 'still-mine\r');
      await out.waitText('got:still-mine');
      expect(out.text).not.toContain('got:taken');
      await owner.shutdown(id, { immediate: true });
    } finally {
      await proxy.close();
    }
  });
});
