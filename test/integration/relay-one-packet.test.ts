import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayClient } from '../../provider/client/relay-client.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay } from '../support/relay-fixture.js';

/** Raw mode without echo: every byte typed comes back exactly once, from cat. */
const RAW_CAT = 'stty raw -echo; printf READY; exec cat';
const KEYS = 30;
/** Each way: segments of one keystroke stay apart in time, as on a real network. */
const ONE_WAY_MS = 10;
const KEY_GAP_MS = 10;
/** A heartbeat may fall into the run, and under load an input acknowledgement may go alone (~10 %). */
const SLACK = 4;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('one keystroke, one segment on the WebSocket hop (Nagle on)', () => {
  let fx: RelayFixture;
  let proxy: FaultProxy;
  let client: RelayClient;

  beforeAll(async () => {
    fx = await startRelay({ manualAck: true });
    proxy = await FaultProxy.start({ host: '127.0.0.1', port: fx.port }, { nagle: true });
    // The consumer acknowledges what it took: its credit must ride with the next keystroke.
    client = fx.client({ url: `ws://127.0.0.1:${proxy.port}`, manualAck: true });
  });

  afterAll(async () => {
    await fx?.cleanup();
    await proxy?.close();
  });

  it('sends input with the credit for the last echo, and the echo with its input acknowledgement', async () => {
    // Output can be emitted before spawn() resolves: collect per id, pick ours after.
    const texts = new Map<string, string>();
    client.onData((e) => {
      texts.set(e.id, (texts.get(e.id) ?? '') + Buffer.from(e.data).toString('latin1'));
      client.acknowledgeDataEvent(e.id, e.data.length);
    });
    const r = await client.spawn({ host: 'local', cols: 80, rows: 24, command: 'sh', args: ['-c', RAW_CAT] });
    const id = r.id;
    if (r.replay) texts.set(id, Buffer.from(r.replay).toString('latin1') + (texts.get(id) ?? ''));
    let text = '';
    client.onData((e) => {
      if (e.id === id) text = texts.get(id) ?? '';
    });
    text = texts.get(id) ?? '';
    await waitFor(() => text.includes('READY'), 15_000, 'READY');
    proxy.delay(ONE_WAY_MS);
    const type = async (ch: string) => {
      const want = text.length + 1;
      const acked = client.write(id, ch);
      await waitFor(() => text.length >= want, 5000, `echo of ${ch}`);
      await acked;
      expect(text.endsWith(ch)).toBe(true);
    };
    for (const ch of 'warm') await type(ch);
    const s0 = proxy.stats();
    for (let i = 0; i < KEYS; i++) {
      await type(String.fromCharCode(0x61 + (i % 26)));
      await sleep(KEY_GAP_MS);
    }
    const s1 = proxy.stats();
    const up = s1.readsUp - s0.readsUp;
    const down = s1.readsDown - s0.readsDown;
    console.log(`WebSocket hop, ${KEYS} keystrokes: ${up} segments up, ${down} down`);
    expect(up).toBeGreaterThanOrEqual(KEYS);
    expect(up).toBeLessThanOrEqual(KEYS + SLACK);
    expect(down).toBeLessThanOrEqual(KEYS + SLACK);
    await client.shutdown(id, { immediate: true });
  }, 60_000);
});
