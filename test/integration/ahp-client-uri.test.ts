import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RootState } from '../../relay/ahp/types.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { open, type TestClient } from '../support/relay-test-support.js';

const V = ['0.1.0'];
const CLIENT = 'ide-1';

/**
 * AHP createTerminal at a client-chosen URI, against a real relay and the real local daemon: the
 * URI is the terminal's channel everywhere, it is unique, and it survives the client's reconnect
 * and a relay restart because the daemon stores it with the session.
 */
describe('AHP terminals at client-chosen URIs (real relay, local host)', { timeout: 60_000 }, () => {
  let fx: RelayFixture;
  const clients: TestClient[] = [];

  beforeAll(async () => {
    fx = await startRelay();
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await fx?.cleanup();
  });

  async function connect(): Promise<TestClient> {
    const c = await open(fx.server.url, { token: TEST_TOKEN });
    clients.push(c);
    return c;
  }

  async function initialized(): Promise<TestClient> {
    const c = await connect();
    await c.request('initialize', { protocolVersions: V, clientId: CLIENT });
    return c;
  }

  const input = (c: TestClient, channel: string, clientSeq: number, data: string) =>
    c.notify('dispatchAction', { channel, clientSeq, action: { type: 'terminal/input', data } });

  const bash = { command: 'bash', args: ['--norc', '--noprofile'] };

  it('creates, subscribes, types, reconnects, survives a relay restart, and disposes at the chosen URI', async () => {
    const uri = `ahp-terminal:/round-trip-${process.pid}`;
    const a = await initialized();
    const created = await a.request('createTerminal', {
      channel: uri,
      claim: { kind: 'client', clientId: CLIENT },
      name: 'build',
      cwd: `file://${fx.local.home}`,
      ...bash,
    });
    expect(created).toEqual({ channel: uri });
    const root = await a.waitEnvelope(
      (e) => e.action.type === 'root/terminalsChanged' && e.action.terminals.some((t) => t.resource === uri),
      'catalog entry at the chosen URI',
    );
    expect(root.channel).toBe('ahp-root://');
    const { snapshot } = await a.request('subscribe', { channel: uri });
    expect(snapshot.resource).toBe(uri);
    input(a, uri, 1, 'echo first-$((20+1))\r');
    await a.waitFor(() => a.dataOf(uri).includes('first-21'), 'output on the chosen channel');

    // The daemon knows the alias: the relay's listing shows it with the minted id.
    const listed = (await fx.local.provider.listProcesses()).find((t) => t.alias === uri);
    expect(listed?.id).toMatch(/^local\/pty-\d+$/);

    // The client's connection drops; a reconnect replays what it missed on the same URI.
    const last = a.envelopes.at(-1)!.serverSeq;
    a.close();
    const b = await connect();
    const replay = await b.request('reconnect', {
      clientId: CLIENT,
      lastSeenServerSeq: last,
      subscriptions: ['ahp-root://', uri],
    });
    expect(replay.type).toBe('replay');
    expect(replay.missing).toEqual([]);
    input(b, uri, 2, 'echo second-$((20+2))\r');
    await b.waitFor(() => b.dataOf(uri).includes('second-22'), 'output after the reconnect');

    // The relay restarts: a new relay knows no terminals until the daemon's alias is looked up.
    b.close();
    await fx.restart();
    expect(fx.registry.list()).toEqual([]);
    const c = await connect();
    const after = await c.request('reconnect', {
      clientId: CLIENT,
      lastSeenServerSeq: last,
      subscriptions: [uri],
    });
    expect(after.type).toBe('snapshot');
    expect(after.snapshots.map((s: { resource: string }) => s.resource)).toEqual([uri]);
    const state = after.snapshots[0].state;
    const text = state.content.map((p: { value?: string; output?: string }) => p.value ?? p.output).join('');
    expect(text).toContain('second-22');
    expect(fx.registry.list().map((r) => r.alias)).toEqual([uri]);
    input(c, uri, 3, 'echo third-$((20+3))\r');
    await c.waitFor(() => c.dataOf(uri).includes('third-23'), 'output after the relay restart');
    const rootNow = (await c.request('subscribe', { channel: 'ahp-root://' })).snapshot.state as RootState;
    expect(rootNow.terminals.map((t) => t.resource)).toEqual([uri]);

    // Dispose at the chosen URI ends the PTY; the URI is free again.
    expect(await c.request('disposeTerminal', { channel: uri })).toEqual({});
    const gone = await c.call('subscribe', { channel: uri });
    expect(gone.error?.data?.code).toBe('NOT_FOUND');
    expect((await fx.local.provider.listProcesses()).some((t) => t.alias === uri)).toBe(false);
    const again = await c.request('createTerminal', {
      channel: uri,
      claim: { kind: 'client', clientId: CLIENT },
      ...bash,
    });
    expect(again.channel).toBe(uri);
    await c.request('disposeTerminal', { channel: uri });
  });

  it('after the daemon and its PTY die (a host restart) the catalog lists the restored terminal at its URI', async () => {
    const uri = `ahp-terminal:/restored-${process.pid}`;
    const a = await initialized();
    await a.request('createTerminal', { channel: uri, claim: { kind: 'client', clientId: CLIENT }, ...bash });
    await a.request('subscribe', { channel: uri });
    input(a, uri, 1, 'echo before-reboot-$((40+2))\r');
    await a.waitFor(() => a.dataOf(uri).includes('before-reboot-42'), 'output before the kill');
    const pty = (await fx.local.provider.listProcesses()).find((t) => t.alias === uri);
    expect(pty).toBeDefined();
    // Its cold-restore record is on disk (the daemon saves every 2 s while it changes). Only a
    // committed record counts: a save's temp file (written, not yet renamed) is not one, and a
    // kill before its rename leaves nothing to restore (on a loaded machine this raced).
    const restoreDir = join(fx.local.stateDir, 'restore');
    await waitFor(
      () =>
        readdirSync(restoreDir).some((f) => {
          if (!f.endsWith('.json')) return false;
          const text = readFileSync(join(restoreDir, f), 'utf8');
          return text.includes(uri) && text.includes('before-reboot-42');
        }),
      20_000,
      'the record',
    );
    a.close();

    // Everything dies at once, as at a power cut; a new relay starts and a new daemon with it.
    process.kill(fx.local.daemonPid, 'SIGKILL');
    process.kill(pty!.pid, 'SIGKILL');
    await fx.restart();
    const c = await initialized();
    const { snapshot } = await c.request('subscribe', { channel: uri });
    expect(snapshot.resource).toBe(uri);
    const state = snapshot.state;
    expect(state.exitCode).toBe(137);
    const text = state.content.map((p: { value?: string; output?: string }) => p.value ?? p.output).join('');
    expect(text).toContain('before-reboot-42');
    const root = (await c.request('subscribe', { channel: 'ahp-root://' })).snapshot.state as RootState;
    expect(root.terminals.find((t) => t.resource === uri)).toMatchObject({ exitCode: 137 });
    // Disposing it dismisses the record: the URI is free again.
    expect(await c.request('disposeTerminal', { channel: uri })).toEqual({});
    expect((await fx.local.provider.listProcesses()).some((t) => t.alias === uri)).toBe(false);
  });

  it('refuses a duplicate URI (published, in flight, or only known to the daemon) and bad URIs', async () => {
    const uri = `ahp-terminal:/dup-${process.pid}`;
    const claim = { kind: 'client', clientId: CLIENT };
    const a = await initialized();
    // Two creates racing for one URI: exactly one wins.
    const both = await Promise.all([
      a.call('createTerminal', { channel: uri, claim, ...bash }),
      a.call('createTerminal', { channel: uri, claim, ...bash }),
    ]);
    expect(both.filter((r) => r.result?.channel === uri)).toHaveLength(1);
    expect(both.filter((r) => r.error?.data?.code === 'ALREADY_EXISTS')).toHaveLength(1);
    const dup = await a.call('createTerminal', { channel: uri, claim, ...bash });
    expect(dup.error).toMatchObject({ code: -32000, data: { code: 'ALREADY_EXISTS' } });
    expect(dup.error?.message).toMatch(/taken by local\/pty-\d+/);

    // After a relay restart the new relay has published nothing, but the daemon still holds it.
    a.close();
    await fx.restart();
    const b = await initialized();
    const afterRestart = await b.call('createTerminal', { channel: uri, claim, ...bash });
    expect(afterRestart.error?.data?.code).toBe('ALREADY_EXISTS');
    expect((await fx.local.provider.listProcesses()).filter((t) => t.alias === uri)).toHaveLength(1);

    // The minted ids and malformed URIs are not client-chosen URIs.
    for (const channel of [
      'ptyrelay-terminal:/local/mine',
      'ahp-root://',
      'no scheme',
      `x:${'y'.repeat(1100)}`,
    ]) {
      const bad = await b.call('createTerminal', { channel, claim, ...bash });
      expect(bad.error?.data?.code, channel).toBe('INVALID_ARGUMENT');
    }
    await b.request('disposeTerminal', { channel: uri });
    expect((await fx.local.provider.listProcesses()).some((t) => t.alias === uri)).toBe(false);
  });
});
