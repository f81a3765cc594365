import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeInputFrame } from '../../provider/wire/frame-codec.js';
import type { TestClient } from '../support/relay-test-support.js';
import { type ScopedRelay, STARTUP_TOKEN, startScopedRelay } from '../support/scoped-relay.js';

/**
 * Each scope against each `ptyrelay/*`, `web/*` and token method over a real relay and a real
 * local daemon: what a token may not do is refused with NOT_PERMITTED and has no effect; what it
 * may do works. T1 and T2 are terminals of the startup token's client; `watch` and `drive` are
 * limited to T1.
 */

type Outcome = 'ok' | 'denied';
const NAMES = ['viewer', 'builder', 'localdev', 'bview', 'watch', 'drive', 'ops', 'startup'] as const;
type Name = (typeof NAMES)[number];
/** Who may see T1 / drive T1 / see T2 / create on local / see host b / administer. */
const SEE_T1: Name[] = ['viewer', 'builder', 'localdev', 'watch', 'drive', 'ops', 'startup'];
const DRIVE_T1: Name[] = ['localdev', 'drive', 'ops', 'startup'];
const SEE_T2: Name[] = ['viewer', 'builder', 'localdev', 'ops', 'startup'];
const CREATE_LOCAL: Name[] = ['localdev', 'ops', 'startup'];
const SEE_B: Name[] = ['viewer', 'builder', 'bview', 'ops', 'startup'];
const ADMIN: Name[] = ['ops', 'startup'];

const outcome = (allowed: Name[], n: Name): Outcome => (allowed.includes(n) ? 'ok' : 'denied');

describe('scoped tokens over ptyrelay/* and web/*', { timeout: 120_000 }, () => {
  let fx: ScopedRelay;
  let t1: string;
  let t2: string;
  const clients = {} as Record<Name, TestClient>;

  beforeAll(async () => {
    fx = await startScopedRelay();
    const admin = await fx.client(STARTUP_TOKEN);
    const spawn = async () =>
      (
        await admin.request('ptyrelay/spawn', {
          host: 'local',
          cols: 80,
          rows: 24,
          command: 'sh',
          requestId: randomUUID(),
        })
      ).id as string;
    t1 = await spawn();
    t2 = await spawn();
    fx.mint('watch', { scope: 'read', terminal: t1 });
    fx.mint('drive', { scope: 'write', terminal: t1 });
    for (const n of NAMES) clients[n] = await fx.client(n === 'startup' ? STARTUP_TOKEN : fx.tokens[n]!);
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  /** `ok`, `denied` (NOT_PERMITTED), or the other error code. */
  async function tryCall(n: Name, method: string, params: unknown): Promise<string> {
    const r = await clients[n].call(method, params);
    if (!r.error) return 'ok';
    const code = r.error.data?.code ?? String(r.error.code);
    return code === 'NOT_PERMITTED' ? 'denied' : code;
  }

  async function matrix(method: string, params: () => unknown, allowed: Name[]): Promise<void> {
    const got: Record<string, string> = {};
    const want: Record<string, string> = {};
    for (const n of NAMES) {
      got[n] = await tryCall(n, method, params());
      want[n] = outcome(allowed, n);
    }
    expect(got).toEqual(want);
  }

  it('ptyrelay/hosts and list show only the hosts and terminals a token sees', async () => {
    const hosts: Record<string, string[]> = {};
    const lists: Record<string, string[]> = {};
    for (const n of NAMES) {
      hosts[n] = (await clients[n].request('ptyrelay/hosts')).hosts.map((h: { name: string }) => h.name);
      const ids = (
        await clients[n].request('ptyrelay/list', { host: 'local' }).catch(() => ({ terminals: [] }))
      ).terminals
        .map((t: { id: string }) => t.id)
        .filter((id: string) => id === t1 || id === t2);
      lists[n] = ids.sort();
    }
    const all = ['local', 'b'];
    expect(hosts).toEqual({
      viewer: all,
      builder: all,
      localdev: ['local'],
      bview: ['b'],
      watch: ['local'],
      drive: ['local'],
      ops: all,
      startup: all,
    });
    const both = [t1, t2].sort();
    expect(lists).toEqual({
      viewer: both,
      builder: both,
      localdev: both,
      bview: [],
      watch: [t1],
      drive: [t1],
      ops: both,
      startup: both,
    });
    expect(await tryCall('bview', 'ptyrelay/list', { host: 'local' })).toBe('denied');
  });

  it('reading methods follow what the token sees', async () => {
    for (const m of [
      'ptyrelay/getCwd',
      'ptyrelay/snapshot',
      'ptyrelay/probe',
      'ptyrelay/hasChildProcesses',
    ]) {
      await matrix(m, () => ({ id: t1 }), SEE_T1);
      await matrix(m, () => ({ id: t2 }), SEE_T2);
    }
    await matrix('ptyrelay/agentRead', () => ({ id: t1, count: 5 }), SEE_T1);
    await matrix('ptyrelay/attach', () => ({ id: t1 }), SEE_T1);
    await matrix('ptyrelay/attach', () => ({ id: t2 }), SEE_T2);
    // Backgrounding is a viewer's own preference (relay/flow/background-by-viewers.ts): reading is enough.
    await matrix('ptyrelay/setBackgrounded', () => ({ id: t1, background: false }), SEE_T1);
  });

  it('driving methods need write on the terminal (local: only when the token names it)', async () => {
    await matrix('ptyrelay/resize', () => ({ id: t1, cols: 81, rows: 25 }), DRIVE_T1);
    await matrix('ptyrelay/signal', () => ({ id: t1, signal: 'SIGCONT' }), DRIVE_T1);
    await matrix('ptyrelay/clear', () => ({ id: t1 }), DRIVE_T1);
    for (const n of NAMES) {
      expect(await tryCall(n, 'ptyrelay/pause', { id: t1 })).toBe(outcome(DRIVE_T1, n));
      expect(await tryCall(n, 'ptyrelay/resume', { id: t1 })).toBe(outcome(DRIVE_T1, n));
    }
    await matrix('ptyrelay/agentSend', () => ({ id: t1, data: '', timeoutMs: 200 }), DRIVE_T1);
    await matrix('web/rename', () => ({ id: t1, name: 'renamed' }), DRIVE_T1);
  });

  it('creating terminals needs write on the host and no --terminal limit', async () => {
    const made: string[] = [];
    for (const n of NAMES) {
      const r = await clients[n].call('ptyrelay/spawn', {
        host: 'local',
        cols: 80,
        rows: 24,
        command: 'true',
        requestId: randomUUID(),
      });
      expect([n, r.error ? (r.error.data?.code ?? r.error.code) : 'ok']).toEqual([
        n,
        CREATE_LOCAL.includes(n) ? 'ok' : 'NOT_PERMITTED',
      ]);
      if (r.result) made.push(r.result.id);
    }
    expect(made).toHaveLength(CREATE_LOCAL.length);
  });

  it('input frames: refused ones fail NOT_PERMITTED in the input ack and never reach the shell', async () => {
    for (const n of NAMES) {
      const c = clients[n];
      const marker = `typed-by-${n}`;
      c.ws.send(encodeInputFrame(t1, 1, Buffer.from(`echo ${marker}\r`)));
      const ack = await c.waitFor(
        () =>
          c.notifications.find((x) => x.method === 'ptyrelay/inputAck')?.params as
            | { upTo: number; failed?: { error: { code: string } }[] }
            | undefined,
        `input ack for ${n}`,
      );
      expect([n, ack.upTo, ack.failed?.[0]?.error.code ?? 'ok']).toEqual([
        n,
        1,
        DRIVE_T1.includes(n) ? 'ok' : 'NOT_PERMITTED',
      ]);
    }
    const screen = async () =>
      ((await clients.startup.request('ptyrelay/agentRead', { id: t1, count: 200 })).lines as string[]).join(
        '\n',
      );
    await expect
      .poll(screen, { timeout: 10_000 })
      .toMatch(new RegExp(DRIVE_T1.map((n) => `typed-by-${n}`).join('[\\s\\S]*')));
    const text = await screen();
    for (const n of NAMES.filter((x) => !DRIVE_T1.includes(x))) expect(text).not.toContain(`typed-by-${n}`);
  });

  it('host keys: inspecting needs the host, trusting needs admin', async () => {
    const inspect: Record<string, string> = {};
    const trust: Record<string, string> = {};
    for (const n of NAMES) {
      inspect[n] = await tryCall(n, 'ptyrelay/hostKey', { host: 'b' });
      trust[n] = await tryCall(n, 'ptyrelay/trustHostKey', { host: 'b', fingerprint: 'SHA256:abc' });
    }
    // b does not answer: allowed calls fail reaching it, never NOT_PERMITTED.
    for (const n of NAMES) {
      expect([n, inspect[n] === 'denied']).toEqual([n, !SEE_B.includes(n)]);
      expect([n, trust[n] === 'denied']).toEqual([n, !ADMIN.includes(n)]);
    }
  });

  it('token management over the API is admin-only; an admin-made token works at once', async () => {
    await matrix('ptyrelay/tokenList', () => ({}), ADMIN);
    expect(await tryCall('viewer', 'ptyrelay/tokenCreate', { scope: 'admin' })).toBe('denied');
    expect(await tryCall('localdev', 'ptyrelay/tokenRevoke', { name: 'viewer' })).toBe('denied');
    const made = await clients.ops.request('ptyrelay/tokenCreate', {
      scope: 'read',
      name: 'api-made',
      ttl: '1h',
    });
    expect(made.record).toMatchObject({ name: 'api-made', scope: 'read' });
    expect(made.record.sha256).toBeUndefined();
    const listed = await clients.ops.request('ptyrelay/tokenList');
    expect(JSON.stringify(listed)).not.toContain(made.token);
    expect(listed.tokens.map((t: { name: string }) => t.name)).toContain('api-made');
    const c = await fx.client(made.token);
    expect((await c.request('ptyrelay/hosts')).hosts).toHaveLength(2);
    expect((await c.call('ptyrelay/resize', { id: t1, cols: 80, rows: 24 })).error?.data?.code).toBe(
      'NOT_PERMITTED',
    );
  });

  it('the web overview lists only what a token sees', async () => {
    const seen: Record<string, string[]> = {};
    for (const n of NAMES) {
      const r = await clients[n].request('web/overview');
      seen[n] = r.terminals
        .map((t: { id: string }) => t.id)
        .filter((id: string) => id === t1 || id === t2)
        .sort();
    }
    const both = [t1, t2].sort();
    expect(seen).toEqual({
      viewer: both,
      builder: both,
      localdev: both,
      bview: [],
      watch: [t1],
      drive: [t1],
      ops: both,
      startup: both,
    });
  });

  it('/healthz shows hosts only with a token, and only the ones it sees; /metrics is admin', async () => {
    const health = async (token?: string) =>
      (
        await fetch(
          `${fx.server.httpUrl}/healthz`,
          token ? { headers: { authorization: `Bearer ${token}` } } : {},
        )
      ).json();
    expect(await health()).toEqual({ ok: true });
    expect(Object.keys((await health(fx.tokens.bview)).hosts)).toEqual(['b']);
    expect(Object.keys((await health(STARTUP_TOKEN)).hosts).sort()).toEqual(['b', 'local']);
    const metrics = async (token: string) =>
      (await fetch(`${fx.server.httpUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status;
    expect(await metrics(fx.tokens.viewer!)).toBe(401);
    expect(await metrics(fx.tokens.ops!)).toBe(200);
  });

  it('shutdown: refused for every token that may not drive T2, and T2 keeps running', async () => {
    const refused = NAMES.filter((n) => !['localdev', 'ops', 'startup'].includes(n));
    for (const n of refused)
      expect([n, await tryCall(n, 'ptyrelay/shutdown', { id: t2 })]).toEqual([n, 'denied']);
    expect((await clients.startup.request('ptyrelay/probe', { id: t2 })).alive).toBe(true);
    expect(await tryCall('localdev', 'ptyrelay/shutdown', { id: t2 })).toBe('ok');
  });
});
