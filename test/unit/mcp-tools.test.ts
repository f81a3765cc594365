import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { AgentSendResult, IPtyProvider, PtySpawnResult } from '../../provider/contract.js';
import { createTerminalMcpServer, END_REASON_TEXT } from '../../relay/agents/mcp-tools.js';
import { TerminalToolService } from '../../relay/agents/terminal-tool-service.js';

/** A provider whose sends take `sendMs` and end with `result`. */
function provider(sendMs: number, result: AgentSendResult): IPtyProvider {
  return {
    spawn: async (): Promise<PtySpawnResult> => ({
      id: 'local/pty-1',
      pid: 1,
      incarnationId: 'i',
      cols: 80,
      rows: 24,
      providerSequence: { value: 0, generation: 'continued' },
    }),
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
