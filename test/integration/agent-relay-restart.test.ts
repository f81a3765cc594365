import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';
import { ServeProcess } from '../support/serve-process.js';

/** Short, so the test can see a grace run out; counted from when the owner was last connected. */
const GRACE_MS = 6000;

// biome-ignore lint/suspicious/noExplicitAny: structured tool results, checked field by field
type Structured = any;

describe('agent terminals survive a relay restart', { timeout: 180_000 }, () => {
  let serve: ServeProcess;
  let env: NodeJS.ProcessEnv;
  let token = '';

  /** An MCP client of the agent named `agent`, over the relay's HTTP endpoint. */
  const agentClient = async (agent: string) => {
    const c = new Client({ name: 'restart-test', version: '1.0.0' });
    const headers = { authorization: `Bearer ${token}`, 'x-ptyrelay-agent': agent };
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.httpUrl}/mcp`), { requestInit: { headers } }),
    );
    return c;
  };
  const call = async (c: Client, name: string, args: Record<string, unknown> = {}) =>
    (await c.callTool({ name, arguments: args })) as CallToolResult;
  const listed = async (c: Client): Promise<{ id: string; providerId: string }[]> =>
    ((await call(c, 'terminal_list')).structuredContent as Structured).terminals;
  /** The agent's terminals once the new relay adopted them from the host. */
  const adopted = (c: Client, id: string) =>
    waitFor(async () => (await listed(c)).find((t) => t.id === id), 15_000, `${id} to be adopted`);

  let termId = '';
  let providerId = '';

  beforeAll(async () => {
    serve = new ServeProcess('ptr-agent-restart-');
    writeFileSync(serve.configFile, JSON.stringify({ agents: { ownerGraceMs: GRACE_MS } }));
    env = serve.env;
    await serve.start();
    token = serve.token();
    const c = await agentClient('builder');
    try {
      const opened = await call(c, 'terminal_open', { host: 'local', command: 'bash' });
      expect(opened.isError, JSON.stringify(opened.content)).toBeFalsy();
      termId = (opened.structuredContent as Structured).id;
      providerId = (await listed(c)).find((t) => t.id === termId)!.providerId;
      const sent = await call(c, 'terminal_send', { id: termId, text: 'echo agent-$((2+3))' });
      expect((sent.structuredContent as Structured).output).toMatch(/^agent-5$/m);
    } finally {
      await c.close();
    }
  });
  afterAll(async () => {
    await serve?.cleanup();
  });

  it('after SIGKILL the agent finds its terminal under the same id, with its output, and drives it', async () => {
    await serve.stop('SIGKILL');
    await serve.start();
    const c = await agentClient('builder');
    try {
      const t = await adopted(c, termId);
      expect(t.providerId).toBe(providerId);
      const read = await call(c, 'terminal_read', { id: termId });
      expect((read.structuredContent as Structured).text ?? JSON.stringify(read.content)).toContain(
        'agent-5',
      );
      const sent = await call(c, 'terminal_send', { id: termId, text: 'echo again-$((3*3))' });
      expect((sent.structuredContent as Structured).output).toMatch(/^again-9$/m);
      // Another agent does not get it.
      const other = await agentClient('someone-else');
      try {
        expect((await listed(other)).some((x) => x.providerId === providerId)).toBe(false);
      } finally {
        await other.close();
      }
      // The catalog shows it claimed by its owner, not as unclaimed.
      const ls = JSON.parse((await runCli(['ls', '--json'], env)).stdout).terminals;
      expect(ls.find((x: { id: string }) => x.id === providerId)?.owner).toBe('session:agent:builder');
    } finally {
      await c.close();
    }
  });

  it('after a graceful stop (the agent connected) the next relay gives it back too', async () => {
    const c = await agentClient('builder');
    await adopted(c, termId);
    await serve.stop('SIGTERM');
    await c.close().catch(() => {});
    await serve.start();
    const again = await agentClient('builder');
    try {
      await adopted(again, termId);
      const sent = await call(again, 'terminal_send', { id: termId, text: 'echo back' });
      expect((sent.structuredContent as Structured).output).toMatch(/^back$/m);
    } finally {
      await again.close();
    }
  });

  it('an owner that never comes back: its terminal ends once the grace from its last connection ran out', async () => {
    // The agent was last connected when its client closed above; the relay dies without a word.
    const gone = Date.now();
    await serve.stop('SIGKILL');
    await serve.start();
    const listedIds = async () =>
      (
        JSON.parse((await runCli(['ls', '--json'], env)).stdout).terminals as {
          id: string;
          exited?: unknown;
        }[]
      )
        .filter((t) => !t.exited)
        .map((t) => t.id);
    expect(await listedIds()).toContain(providerId);
    await waitFor(
      async () => !(await listedIds()).includes(providerId),
      GRACE_MS + 15_000,
      'the grace to run out',
    );
    // Not before the grace counted from the owner's last connection (not from this relay's start).
    expect(Date.now() - gone).toBeGreaterThanOrEqual(GRACE_MS - 2000);
  });
});
