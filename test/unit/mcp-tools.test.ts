import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type {
  AgentSendResult,
  IPtyProvider,
  PtySpawnOptions,
  PtySpawnResult,
} from '../../provider/contract.js';
import { AWAITING_TEXT, createTerminalMcpServer, END_REASON_TEXT } from '../../relay/agents/mcp-tools.js';
import { TerminalToolService } from '../../relay/agents/terminal-tool-service.js';

/** A provider whose sends take `sendMs` and end with `result`; `spawned` records spawn options. */
function provider(sendMs: number, result: AgentSendResult, spawned: PtySpawnOptions[] = []): IPtyProvider {
  return {
    spawn: async (o: PtySpawnOptions): Promise<PtySpawnResult> => {
      spawned.push(o);
      return {
        id: `local/pty-${spawned.length}`,
        pid: 1,
        incarnationId: 'i',
        cols: 80,
        rows: 24,
        providerSequence: { value: 0, generation: 'continued' },
      };
    },
    agentSend: () => new Promise((r) => setTimeout(() => r(result), sendMs)),
    agentRead: async () => ({ lines: [], lineBegin: 0, lineEnd: 0, totalLines: 0, truncated: false }),
    onExit: () => () => {},
  } as unknown as IPtyProvider;
}

async function connect(p: IPtyProvider) {
  const service = new TerminalToolService({ hosts: { hosts: () => ['local'], providerFor: () => p } });
  const server = createTerminalMcpServer(service, service.owner('t'), '0.0.0', { progressMs: 100 });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: 'unit', version: '1.0.0' });
  await client.connect(b);
  return client;
}

describe('MCP terminal tools', () => {
  it('a long send reports progress, so a client timeout shorter than the send does not fire', async () => {
    const client = await connect(
      provider(800, { reason: 'timeout', output: 'partial', truncated: false, elapsedMs: 800 }),
    );
    const id = (
      (await client.callTool({ name: 'terminal_open', arguments: {} })).structuredContent as { id: string }
    ).id;
    let progress = 0;
    const r = (await client.callTool({ name: 'terminal_send', arguments: { id, text: 'make' } }, undefined, {
      timeout: 400,
      resetTimeoutOnProgress: true,
      onprogress: () => {
        progress++;
      },
    })) as CallToolResult;
    expect(progress).toBeGreaterThanOrEqual(3);
    expect(r.structuredContent).toMatchObject({ reason: 'timeout', meaning: END_REASON_TEXT.timeout });
    const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    expect(text).toContain('does NOT mean the command finished');
    expect(text).toContain('--- output ---\npartial');
    await client.close();
  });

  it('a stdin_read says what it awaits, in the text and the structured result', async () => {
    const client = await connect(
      provider(1, {
        reason: 'stdin_read',
        output: '[sudo] password for me: ',
        truncated: false,
        elapsedMs: 5,
        awaiting: 'password',
      }),
    );
    const id = (
      (await client.callTool({ name: 'terminal_open', arguments: {} })).structuredContent as { id: string }
    ).id;
    const r = (await client.callTool({
      name: 'terminal_send',
      arguments: { id, text: 'sudo true' },
    })) as CallToolResult;
    expect(r.structuredContent).toMatchObject({
      reason: 'stdin_read',
      awaiting: 'password',
      meaning: `${END_REASON_TEXT.stdin_read} ${AWAITING_TEXT.password}`,
    });
    const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    expect(text).toContain(`${id}: reason=stdin_read awaiting=password after 5 ms`);
    expect(text).toContain('Never type a secret the user did not give you');
    expect(AWAITING_TEXT.pager).toContain('Send "q" to leave it');
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'terminal_send')?.description).toContain(
      `- pager: ${AWAITING_TEXT.pager}`,
    );
    await client.close();
  });

  it('terminal_open passes env through; without a pager variable the terminal gets none', async () => {
    const spawned: PtySpawnOptions[] = [];
    const client = await connect(
      provider(1, { reason: 'stdin_read', output: '', truncated: false, elapsedMs: 1 }, spawned),
    );
    await client.callTool({ name: 'terminal_open', arguments: { env: { PAGER: 'less' } } });
    await client.callTool({ name: 'terminal_open', arguments: { env: { FOO: 'bar' } } });
    expect(spawned.map((o) => o.env)).toEqual([
      { PAGER: 'less' },
      { FOO: 'bar', PAGER: 'cat', GIT_PAGER: 'cat', MANPAGER: 'cat', SYSTEMD_PAGER: '' },
    ]);
    await client.close();
  });

  it('tool errors carry the ptyrelay code for the model', async () => {
    const client = await connect(
      provider(1, { reason: 'stdin_read', output: '', truncated: false, elapsedMs: 1 }),
    );
    const r = (await client.callTool({
      name: 'terminal_close',
      arguments: { id: 'term-7' },
    })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(r.content[0]).toEqual({ type: 'text', text: 'NOT_FOUND: no agent terminal term-7' });
    await client.close();
  });
});
