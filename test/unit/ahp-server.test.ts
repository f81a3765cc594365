import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import type { RootState, TerminalState } from '../../relay/ahp/types.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { connect, FakeProvider, fakeRouter, open, type TestClient } from '../support/relay-test-support.js';

const TOKEN = 'test-token-0123456789abcdef';
const V = ['0.1.0'];

/** AHP conformance of the relay server's channel, driven by an in-memory provider. */
describe('AHP terminal channel over the relay server (fake provider)', () => {
  let server: RelayServer;
  let fake: FakeProvider;
  let registry: TerminalRegistry;
  const clients: TestClient[] = [];

  beforeAll(async () => {
    fake = new FakeProvider();
    registry = new TerminalRegistry();
    server = await startRelayServer({
      listen: { host: '127.0.0.1', port: 0 },
      token: TOKEN,
      router: fakeRouter(fake),
      registry,
      limits: { replayActions: 100 },
    });
  });
  afterAll(async () => {
    await server.close();
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.close();
  });

  async function client(clientId: string, capabilities?: object): Promise<TestClient> {
    const c = await open(server.url, { token: TOKEN });
    clients.push(c);
    await c.request('initialize', { channel: 'ahp-root://', protocolVersions: V, clientId, capabilities });
    return c;
  }

  async function create(c: TestClient, clientId: string): Promise<string> {
    const { channel } = await c.request('createTerminal', {
      claim: { kind: 'client', clientId },
      name: 'job',
    });
    await c.request('subscribe', { channel });
    return channel;
  }

  it('initialize returns the version, serverSeq, a root snapshot and capabilities', async () => {
    const c = await open(server.url, { token: TOKEN });
    clients.push(c);
    const r = await c.request('initialize', { protocolVersions: ['0.1.2', '0.1.0'], clientId: 'init' });
    expect(r.protocolVersion).toBe('0.1.2');
    expect(typeof r.serverSeq).toBe('number');
    expect(r.snapshots[0].resource).toBe('ahp-root://');
    expect(r.snapshots[0].state).toMatchObject({ terminals: expect.any(Array) });
    expect(r.capabilities).toMatchObject({ rawData: false, hosts: ['local'] });
  });

  it('refuses unsupported versions with −32005 and supportedVersions, then closes', async () => {
    const c = await open(server.url, { token: TOKEN });
    const r = await c.call('initialize', { protocolVersions: ['9.0.0'], clientId: 'old' });
    expect(r.error?.code).toBe(-32005);
    expect(r.error?.data?.supportedVersions).toEqual(['0.1.0']);
    await c.waitFor(() => c.closed, 'close');
  });

  it('creates, publishes to the catalog, streams data with strictly increasing serverSeq', async () => {
    const a = await client('a');
    const ch = await create(a, 'a');
    expect(ch).toMatch(/^ptyrelay-terminal:\/local\/pty-\d+$/);
    await a.waitEnvelope(
      (e) =>
        e.action.type === 'root/terminalsChanged' &&
        e.action.terminals.some((t) => t.resource === ch && t.title === 'job'),
      'catalog entry',
    );
    const id = ch.slice('ptyrelay-terminal:/'.length);
    fake.emitData(id, 'hello ');
    fake.emitData(id, 'world');
    fake.facts.emit({
      id,
      incarnationId: registry.get(id).incarnationId,
      seq: 11,
      fact: { type: 'title', title: 'T' },
    });
    await a.waitFor(() => a.dataOf(ch) === 'hello world', 'data');
    await a.waitEnvelope((e) => e.action.type === 'terminal/titleChanged', 'title');
    const seqs = a.envelopes.map((e) => e.serverSeq);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
    const { snapshot } = await a.request('subscribe', { channel: ch });
    const state = snapshot.state as TerminalState;
    expect(state.content).toEqual([{ type: 'unclassified', value: 'hello world' }]);
    expect(state).toMatchObject({ title: 'T', cols: 80, rows: 24, claim: { kind: 'client', clientId: 'a' } });
    expect(snapshot.fromSeq).toBe(seqs.at(-1));
  });

  it('enforces claims: another client’s input, claimed and dispose are rejected with NOT_OWNER', async () => {
    const a = await client('owner');
    const b = await client('intruder');
    const ch = await create(a, 'owner');
    await b.request('subscribe', { channel: ch });
    const writes = fake.writes.length;
    b.notify('dispatchAction', {
      channel: ch,
      clientSeq: 1,
      action: { type: 'terminal/input', data: 'rm -rf /\r' },
    });
    const rej = await b.waitEnvelope((e) => e.origin?.clientSeq === 1, 'input rejection');
    expect(rej.rejectionReason).toMatch(/^NOT_OWNER/);
    expect(rej.origin).toEqual({ clientId: 'intruder', clientSeq: 1 });
    b.notify('dispatchAction', {
      channel: ch,
      clientSeq: 2,
      action: { type: 'terminal/claimed', claim: { kind: 'client', clientId: 'intruder' } },
    });
    expect(
      (await b.waitEnvelope((e) => e.origin?.clientSeq === 2, 'claim rejection')).rejectionReason,
    ).toMatch(/^NOT_OWNER/);
    const d = await b.call('disposeTerminal', { channel: ch });
    expect(d.error).toMatchObject({ code: -32000, data: { code: 'NOT_OWNER' } });
    expect(fake.writes.length).toBe(writes);
    expect(fake.shutdowns).not.toContain(ch.slice(19));
    // Rejections go to the sender only.
    expect(a.envelopes.some((e) => e.rejectionReason)).toBe(false);

    // The holder's input goes to the PTY and is echoed to it; then it hands the claim over.
    a.notify('dispatchAction', {
      channel: ch,
      clientSeq: 7,
      action: { type: 'terminal/input', data: 'ls\r' },
    });
    const echo = await a.waitEnvelope((e) => e.action.type === 'terminal/input', 'input echo');
    expect(echo.rejectionReason).toBeUndefined();
    expect(fake.writes.at(-1)).toEqual({ id: ch.slice(19), data: 'ls\r' });
    a.notify('dispatchAction', {
      channel: ch,
      clientSeq: 8,
      action: { type: 'terminal/claimed', claim: { kind: 'client', clientId: 'intruder' } },
    });
    await b.waitEnvelope((e) => e.action.type === 'terminal/claimed' && !e.rejectionReason, 'claim moved');
    expect(registry.get(ch.slice(19)).claim).toEqual({ kind: 'client', clientId: 'intruder' });
    expect((await b.call('disposeTerminal', { channel: ch })).result).toEqual({});
    expect(fake.shutdowns).toContain(ch.slice(19));
    await a.waitEnvelope(
      (e) => e.action.type === 'root/terminalsChanged' && !e.action.terminals.some((t) => t.resource === ch),
      'catalog removal',
    );
  });

  it('applies resize/title/cleared from the holder and ignores unknown action types', async () => {
    const a = await client('r');
    const ch = await create(a, 'r');
    a.notify('dispatchAction', { channel: ch, clientSeq: 1, action: { type: 'terminal/bogus', x: 1 } });
    a.notify('dispatchAction', {
      channel: ch,
      clientSeq: 2,
      action: { type: 'terminal/resized', cols: 100, rows: 30 },
    });
    a.notify('dispatchAction', {
      channel: ch,
      clientSeq: 3,
      action: { type: 'terminal/titleChanged', title: 'mine' },
    });
    a.notify('dispatchAction', { channel: ch, clientSeq: 4, action: { type: 'terminal/cleared' } });
    await a.waitEnvelope((e) => e.origin?.clientSeq === 4, 'cleared');
    expect(a.envelopes.some((e) => e.origin?.clientSeq === 1)).toBe(false);
    expect(fake.resizes.at(-1)).toEqual({ id: ch.slice(19), cols: 100, rows: 30 });
    const { snapshot } = await a.request('subscribe', { channel: ch });
    expect(snapshot.state).toMatchObject({ cols: 100, rows: 30, title: 'mine', content: [] });
    const bad = await a.call('subscribe', { channel: 'ptyrelay-terminal:/local/nope' });
    expect(bad.error).toMatchObject({ code: -32000, data: { code: 'NOT_FOUND' } });
  });

  it('validates createTerminal: minted channels, client-chosen ids, unknown hosts', async () => {
    const a = await client('m');
    const r = await a.request('createTerminal', {
      channel: 'ptyrelay-terminal:/local/',
      claim: { kind: 'client', clientId: 'm' },
    });
    expect(r.channel).toMatch(/^ptyrelay-terminal:\/local\/pty-/);
    const chosen = await a.call('createTerminal', {
      channel: 'ptyrelay-terminal:/local/mine',
      claim: { kind: 'client', clientId: 'm' },
    });
    expect(chosen.error?.data?.code).toBe('INVALID_ARGUMENT');
    const host = await a.call('createTerminal', { host: 'mars', claim: { kind: 'client', clientId: 'm' } });
    expect(host.error?.data?.code).toBe('UNKNOWN_HOST');
    const noClaim = await a.call('createTerminal', {});
    expect(noClaim.error?.data?.code).toBe('INVALID_ARGUMENT');
  });

  it('after a relay restart, a reconnect finds a running terminal under its URI with its whole history', async () => {
    // Spawned before this relay process existed: the provider has it, the registry does not.
    const { id } = await fake.spawn({ cols: 80, rows: 24 });
    fake.emitData(id, 'before the restart\r\n');
    const ch = `ptyrelay-terminal:/${id}`;
    expect(registry.find(id)).toBeUndefined();
    const b = await open(server.url, { token: TOKEN });
    clients.push(b);
    const r = await b.request('reconnect', {
      clientId: 'survivor',
      lastSeenServerSeq: 123_456,
      subscriptions: [ch, 'ptyrelay-terminal:/local/pty-999'],
    });
    expect(r.type).toBe('snapshot');
    expect(r.snapshots.map((x: { resource: string }) => x.resource)).toEqual([ch]);
    expect((r.snapshots[0].state as TerminalState).content).toEqual([
      { type: 'unclassified', value: 'before the restart\r\n' },
    ]);
    expect(registry.get(id).claim).toEqual({ kind: 'client', clientId: 'survivor' });
    fake.emitData(id, 'live');
    await b.waitFor(() => b.dataOf(ch) === 'live', 'live data');
  });

  it('keeps terminals of a disconnected holder (detach) and replays on reconnect', async () => {
    const a = await client('d');
    const ch = await create(a, 'd');
    const last = a.envelopes.at(-1)?.serverSeq ?? 0;
    a.close();
    await a.waitFor(() => a.closed, 'close');
    const id = ch.slice(19);
    fake.emitData(id, 'while away');
    await new Promise((r) => setTimeout(r, 20));
    expect(registry.find(id)).toBeDefined();
    const b = await open(server.url, { token: TOKEN });
    clients.push(b);
    const r = await b.request('reconnect', {
      clientId: 'd',
      lastSeenServerSeq: last,
      subscriptions: ['ahp-root://', ch, 'ptyrelay-terminal:/local/gone'],
    });
    expect(r.type).toBe('replay');
    expect(r.missing).toEqual(['ptyrelay-terminal:/local/gone']);
    expect(r.actions.map((e: { action: { data?: string } }) => e.action.data).join('')).toContain(
      'while away',
    );
    // Far too old: snapshots instead (the ring holds 100 envelopes here).
    for (let i = 0; i < 150; i++) fake.emitData(id, '.');
    await b.waitFor(() => b.dataOf(ch).length >= 150, 'live data after reconnect');
    const s = await b.request('reconnect', { clientId: 'd', lastSeenServerSeq: last, subscriptions: [ch] });
    expect(s.type).toBe('snapshot');
    expect((s.snapshots[0].state as TerminalState).content[0]).toMatchObject({ type: 'unclassified' });
    const root = (await b.request('subscribe', { channel: 'ahp-root://' })).snapshot.state as RootState;
    expect(root.terminals.some((t) => t.resource === ch)).toBe(true);
  });

  it('sends output as binary Data frames when rawData is negotiated', async () => {
    const a = await client('raw', { rawData: true });
    const ch = await create(a, 'raw');
    fake.emitData(ch.slice(19), 'bytes!');
    await a.waitFor(() => a.binary.length > 0, 'binary frame');
    const [frame] = new FrameDecoder().push(a.binary[0]!);
    expect(frame).toMatchObject({ type: FrameType.Data, id: ch.slice(19), seq: 0 });
    expect(Buffer.from((frame as { data: Uint8Array }).data).toString()).toBe('bytes!');
    expect(a.dataOf(ch)).toBe('');
  });

  it('answers malformed JSON with −32700 and keeps the connection; unknown methods −32601', async () => {
    const c = await open(server.url, { token: TOKEN });
    clients.push(c);
    c.sendRaw('{ not json');
    await c.waitFor(() => c.replies.get(null), 'parse error');
    expect(c.replies.get(null)?.error?.code).toBe(-32700);
    expect((await c.call('noSuchMethod')).error?.code).toBe(-32601);
    expect((await c.call('subscribe', { channel: 'ahp-root://' })).error?.data?.code).toBe(
      'INVALID_ARGUMENT',
    );
  });

  it('refuses upgrades without a valid token (401) or from a foreign Origin (403)', async () => {
    expect(await connect(server.url)).toEqual({ status: 401 });
    expect(await connect(server.url, { token: 'wrong-token-0123456789' })).toEqual({ status: 401 });
    expect(await connect(server.url, { token: TOKEN, origin: 'https://evil.example' })).toEqual({
      status: 403,
    });
    const viaSub = await open(server.url, { token: TOKEN, viaSubprotocol: true, protocols: ['ahp.v1'] });
    expect(viaSub.ws.protocol).toBe('ahp.v1');
    viaSub.close();
  });
});
