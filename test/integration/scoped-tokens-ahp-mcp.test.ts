import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RootState, TerminalInfo } from '../../relay/ahp/types.js';
import { terminalUri } from '../../relay/ahp/uris.js';
import { type ScopedRelay, STARTUP_TOKEN, startScopedRelay } from '../support/scoped-relay.js';

/** Scopes over the AHP terminal channel and MCP at /mcp, against a real relay and local daemon. */

const rootTerminals = (state: unknown) =>
  (state as RootState).terminals.map((t: TerminalInfo) => t.resource).sort();
const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('scoped tokens over AHP and MCP', { timeout: 120_000 }, () => {
  let fx: ScopedRelay;
  let u1: string;
  let u2: string;
  const mcpClients: Client[] = [];

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
    const t1 = await spawn();
    u1 = terminalUri(t1);
    u2 = terminalUri(await spawn());
    fx.mint('watch', { scope: 'read', terminal: t1 });
    fx.mint('drive', { scope: 'write', terminal: t1 });
  });
  afterAll(async () => {
    for (const c of mcpClients) await c.close().catch(() => {});
    await fx?.cleanup();
  });

  it('initialize: the catalog and hosts are filtered; unreadable initial subscriptions are dropped', async () => {
    const watch = await fx.ahp(fx.tokens.watch!, [u1, u2]);
    expect(rootTerminals(watch.init.snapshots[0].state)).toEqual([u1]);
    expect(watch.init.snapshots.map((s: { resource: string }) => s.resource)).toEqual(['ahp-root://', u1]);
    expect(watch.init.capabilities.hosts).toEqual(['local']);
    const viewer = await fx.ahp(fx.tokens.viewer!);
    expect(rootTerminals(viewer.init.snapshots[0].state)).toEqual([u1, u2].sort());
    expect((await fx.ahp(fx.tokens.bview!)).init.capabilities.hosts).toEqual(['b']);
  });

  it('subscribe needs read; a catalog change reaches a limited token filtered', async () => {
    const { c: watch } = await fx.ahp(fx.tokens.watch!);
    expect((await watch.call('subscribe', { channel: u2 })).error?.data?.code).toBe('NOT_PERMITTED');
    expect((await watch.request('subscribe', { channel: u1 })).snapshot.resource).toBe(u1);
    const { c: viewer } = await fx.ahp(fx.tokens.viewer!);
    const admin = await fx.client(STARTUP_TOKEN);
    const t3 = terminalUri(
      (
        await admin.request('ptyrelay/spawn', {
          host: 'local',
          cols: 80,
          rows: 24,
          command: 'sh',
          requestId: randomUUID(),
        })
      ).id,
    );
    const changed = (e: { action: { type: string } }) => e.action.type === 'root/terminalsChanged';
    const seenByViewer = await viewer.waitEnvelope(
      (e) =>
        changed(e) &&
        rootTerminals({ terminals: (e.action as { terminals: TerminalInfo[] }).terminals }).includes(t3),
      'catalog with t3',
    );
    expect(seenByViewer).toBeDefined();
    const forWatch = await watch.waitEnvelope(changed, 'filtered catalog');
    for (const e of watch.envelopes.filter(changed)) {
      expect(rootTerminals({ terminals: (e.action as { terminals: TerminalInfo[] }).terminals })).toEqual([
        u1,
      ]);
    }
    expect(forWatch.serverSeq).toBeGreaterThan(0);
  });

  it('createTerminal needs write on the host; disposeTerminal and input need write on the terminal', async () => {
    const create = async (token: string) =>
      (await fx.ahp(token)).c.call('createTerminal', {
        claim: { kind: 'client', clientId: 'owner' },
        command: 'sh',
      });
    for (const name of ['viewer', 'builder', 'watch', 'drive', 'bview']) {
      expect([name, (await create(fx.tokens[name]!)).error?.data?.code]).toEqual([name, 'NOT_PERMITTED']);
    }
    expect((await create(fx.tokens.localdev!)).result.channel).toMatch(
      /^ptyrelay-terminal:\/local\/pty-\d+$/,
    );

    const { c: watch } = await fx.ahp(fx.tokens.watch!, [u1]);
    expect((await watch.call('disposeTerminal', { channel: u1 })).error?.data?.code).toBe('NOT_PERMITTED');
    watch.notify('dispatchAction', {
      channel: u1,
      clientSeq: 1,
      action: { type: 'terminal/input', data: 'echo no-watch\r' },
    });
    const rej = await watch.waitEnvelope(
      (e) => e.origin?.clientSeq === 1 && e.rejectionReason !== undefined,
      'rejection',
    );
    expect(rej.rejectionReason).toMatch(/^NOT_PERMITTED/);
    watch.notify('dispatchAction', {
      channel: u1,
      clientSeq: 2,
      action: { type: 'terminal/resized', cols: 90, rows: 30 },
    });
    const rej2 = await watch.waitEnvelope(
      (e) => e.origin?.clientSeq === 2 && e.rejectionReason !== undefined,
      'rejection',
    );
    expect(rej2.rejectionReason).toMatch(/^NOT_PERMITTED/);

    const { c: drive } = await fx.ahp(fx.tokens.drive!, [u1]);
    drive.notify('dispatchAction', {
      channel: u1,
      clientSeq: 1,
      action: { type: 'terminal/input', data: 'echo yes-$((20+22))\r' },
    });
    await drive.waitFor(() => drive.dataOf(u1).includes('yes-42'), 'drive output');
    expect(drive.dataOf(u1)).not.toContain('no-watch');
  });

  it('reconnect: what the token may not read comes back as missing', async () => {
    const { c } = await fx.ahp(fx.tokens.watch!);
    const r = await c.request('reconnect', {
      clientId: 'owner',
      lastSeenServerSeq: 0,
      subscriptions: [u1, u2],
    });
    if (r.type === 'replay') expect(r.missing).toEqual([u2]);
    else expect(r.snapshots.map((s: { resource: string }) => s.resource)).toEqual([u1]);
  });

  async function mcp(token: string, headers: Record<string, string> = {}) {
    const c = new Client({ name: 'scoped-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(fx.mcpUrl, {
      requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
    });
    await c.connect(transport);
    mcpClients.push(c);
    return { c, transport };
  }
  const tool = async (c: Client, name: string, args: Record<string, unknown> = {}) =>
    (await c.callTool({ name, arguments: args })) as CallToolResult;

  it('MCP: tools follow the scope; a session cannot be used with another token', async () => {
    for (const name of ['viewer', 'builder', 'watch', 'drive', 'bview']) {
      const { c } = await mcp(fx.tokens[name]!);
      const r = await tool(c, 'terminal_open', { host: 'local', command: 'sh' });
      expect([name, r.isError, textOf(r).split(':')[0]]).toEqual([name, true, 'NOT_PERMITTED']);
      expect(textOf(await tool(c, 'terminal_list'))).toBe('no terminals');
    }
    const { c: dev, transport } = await mcp(fx.tokens.localdev!, { 'x-ptyrelay-agent': 'scoped-agent' });
    const opened = await tool(dev, 'terminal_open', { host: 'local', command: 'sh' });
    expect(opened.isError).toBeFalsy();
    const id = (opened.structuredContent as { id: string }).id;
    const sent = await tool(dev, 'terminal_send', { id, text: 'echo mcp-$((6*7))', timeoutMs: 15_000 });
    expect((sent.structuredContent as { output: string }).output).toContain('mcp-42');

    // The same agent name under a read token sees its terminals but cannot type into them.
    const { c: peek } = await mcp(fx.tokens.viewer!, { 'x-ptyrelay-agent': 'scoped-agent' });
    expect(textOf(await tool(peek, 'terminal_read', { id, count: 5 }))).toContain('mcp-42');
    const typed = await tool(peek, 'terminal_send', { id, text: 'echo nope' });
    expect([typed.isError, textOf(typed).split(':')[0]]).toEqual([true, 'NOT_PERMITTED']);
    const signalled = await tool(peek, 'terminal_signal', { id });
    expect(textOf(signalled).split(':')[0]).toBe('NOT_PERMITTED');
    expect(textOf(await tool(peek, 'terminal_close', { id })).split(':')[0]).toBe('NOT_PERMITTED');

    // The localdev session's id presented with the viewer's token: refused.
    const res = await fetch(fx.mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${fx.tokens.viewer}`,
        'mcp-session-id': transport.sessionId!,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(403);
  });
});
