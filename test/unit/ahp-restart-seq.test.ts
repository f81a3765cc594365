import { afterEach, describe, expect, it } from 'vitest';
import { ActionLog } from '../../relay/ahp/action-log.js';
import type { TerminalState } from '../../relay/ahp/types.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { FakeProvider, fakeRouter, open, type TestClient } from '../support/relay-test-support.js';

const TOKEN = 'test-token-0123456789abcdef';

/**
 * A `lastSeenServerSeq` is only meaningful to the server process that issued it. A relay that
 * restarted and has since issued more envelopes than the client had seen must not mistake the
 * client's seq for one of its own and replay its own unrelated envelopes (the client would miss
 * what happened between the two processes, silently).
 */
describe('AHP serverSeq across a relay restart', () => {
  const servers: RelayServer[] = [];
  const clients: TestClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.close();
  });

  const start = async (fake: FakeProvider) => {
    const s = await startRelayServer({
      listen: { host: '127.0.0.1', port: 0 },
      token: TOKEN,
      router: fakeRouter(fake),
      registry: new TerminalRegistry(),
    });
    servers.push(s);
    return s;
  };
  const connect = async (s: RelayServer) => {
    const c = await open(s.url, { token: TOKEN });
    clients.push(c);
    return c;
  };

  it('a later log never issues a seq an earlier one issued', () => {
    const a = new ActionLog();
    for (let i = 0; i < 50; i++) a.append('c', { type: 'terminal/data', data: 'x' });
    const b = new ActionLog();
    expect(b.serverSeq).toBeGreaterThan(a.serverSeq);
    expect(b.since(a.serverSeq)).toBeUndefined();
  });

  it('answers a seq from the previous process with snapshots, even once it issued more envelopes', async () => {
    const fake = new FakeProvider();
    const relayA = await start(fake);
    const a = await connect(relayA);
    const init = await a.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'w' });
    const { id } = await fake.spawn({ cols: 80, rows: 24 });
    const ch = `ptyrelay-terminal:/${id}`;
    await a.request('subscribe', { channel: ch });
    fake.emitData(id, 'seen before\r\n');
    await a.waitFor(() => a.dataOf(ch).includes('seen before'), 'data on relay A');
    const lastSeen = a.envelopes.at(-1)?.serverSeq ?? init.serverSeq;
    a.close();
    await relayA.close();

    // The "restarted" relay: output the client never saw, then more envelopes than it had seen.
    const relayB = await start(fake);
    fake.emitData(id, 'missed\r\n');
    const other = await connect(relayB);
    await other.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'other' });
    await other.request('subscribe', { channel: ch });
    for (let i = 0; i < 40; i++) fake.emitData(id, `${i}.`);
    await other.waitFor(() => other.dataOf(ch).includes('39.'), 'data on relay B');
    const b = await connect(relayB);
    const re = await b.request('reconnect', {
      clientId: 'w',
      lastSeenServerSeq: lastSeen,
      subscriptions: [ch],
    });
    expect(re.type).toBe('snapshot');
    const text = (re.snapshots[0].state as TerminalState).content
      .map((p) => (p.type === 'unclassified' ? p.value : ''))
      .join('');
    expect(text).toContain('seen before\r\nmissed\r\n');
    expect(text).toContain('39.');
  });
});
