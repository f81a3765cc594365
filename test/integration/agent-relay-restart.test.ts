import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayClient } from '../../provider/client/relay-client.js';
import { runCli } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';
import { ServeProcess } from '../support/serve-process.js';

/** Short, so the test can see a grace run out; counted from when the owner was last connected. */
const GRACE_MS = 6000;

// biome-ignore lint/suspicious/noExplicitAny: structured tool results, checked field by field
type Structured = any;

/**
 * A real `ptyrelay serve` in a throwaway HOME (the local host, an owner grace of GRACE_MS), which
 * a test can kill and start again, and MCP clients of named agents over its HTTP endpoint.
 */
function restartableRelay(prefix: string) {
  let serve: ServeProcess | undefined;
  const f = {
    get env(): NodeJS.ProcessEnv {
      return serve!.env;
    },
    token: '',
    async setUp() {
      serve = new ServeProcess(prefix);
      writeFileSync(serve.configFile, JSON.stringify({ agents: { ownerGraceMs: GRACE_MS } }));
      await f.start();
    },
    async start() {
      await serve!.start();
      f.token ||= serve!.token();
    },
    /** Ends the relay (`signal`: SIGKILL or SIGTERM) and waits until it is gone. */
    stop: (signal: NodeJS.Signals) => serve!.stop(signal),
    tearDown: async () => serve?.cleanup(),
    /** An MCP client of the agent named `agent`, over the relay's HTTP endpoint. */
    async agentClient(agent: string) {
      const c = new Client({ name: 'restart-test', version: '1.0.0' });
      const headers = { authorization: `Bearer ${f.token}`, 'x-ptyrelay-agent': agent };
      await c.connect(
        new StreamableHTTPClientTransport(new URL(`${serve!.httpUrl}/mcp`), { requestInit: { headers } }),
      );
      return c;
    },
    /** The agent's terminals once the new relay adopted them from the host. */
    adopted: (c: Client, id: string) =>
      waitFor(async () => (await listed(c)).find((t) => t.id === id), 15_000, `${id} to be adopted`),
  };
  return f;
}

const call = async (c: Client, name: string, args: Record<string, unknown> = {}) =>
  (await c.callTool({ name, arguments: args })) as CallToolResult;
const listed = async (c: Client): Promise<{ id: string; providerId: string }[]> =>
  ((await call(c, 'terminal_list')).structuredContent as Structured).terminals;

describe('agent terminals survive a relay restart', { timeout: 180_000 }, () => {
  const fx = restartableRelay('ptr-agent-restart-');
  let termId = '';
  let providerId = '';

  beforeAll(async () => {
    await fx.setUp();
    const c = await fx.agentClient('builder');
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
  afterAll(() => fx.tearDown());

  it('after SIGKILL the agent finds its terminal under the same id, with its output, and drives it', async () => {
    await fx.stop('SIGKILL');
    await fx.start();
    const c = await fx.agentClient('builder');
    try {
      const t = await fx.adopted(c, termId);
      expect(t.providerId).toBe(providerId);
      const read = await call(c, 'terminal_read', { id: termId });
      expect((read.structuredContent as Structured).text ?? JSON.stringify(read.content)).toContain(
        'agent-5',
      );
      const sent = await call(c, 'terminal_send', { id: termId, text: 'echo again-$((3*3))' });
      expect((sent.structuredContent as Structured).output).toMatch(/^again-9$/m);
      // Another agent does not get it.
      const other = await fx.agentClient('someone-else');
      try {
        expect((await listed(other)).some((x) => x.providerId === providerId)).toBe(false);
      } finally {
        await other.close();
      }
      // The catalog shows it claimed by its owner, not as unclaimed.
      const ls = JSON.parse((await runCli(['ls', '--json'], fx.env)).stdout).terminals;
      expect(ls.find((x: { id: string }) => x.id === providerId)?.owner).toBe('session:agent:builder');
    } finally {
      await c.close();
    }
  });

  it('after a graceful stop (the agent connected) the next relay gives it back too', async () => {
    const c = await fx.agentClient('builder');
    await fx.adopted(c, termId);
    await fx.stop('SIGTERM');
    await c.close().catch(() => {});
    await fx.start();
    const again = await fx.agentClient('builder');
    try {
      await fx.adopted(again, termId);
      const sent = await call(again, 'terminal_send', { id: termId, text: 'echo back' });
      expect((sent.structuredContent as Structured).output).toMatch(/^back$/m);
    } finally {
      await again.close();
    }
  });

  it('an owner that never comes back: its terminal ends once the grace from its last connection ran out', async () => {
    // The agent was last connected when its client closed above; the relay dies without a word.
    const gone = Date.now();
    await fx.stop('SIGKILL');
    await fx.start();
    const listedIds = async () =>
      (
        JSON.parse((await runCli(['ls', '--json'], fx.env)).stdout).terminals as {
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

describe('command records survive a relay restart', { timeout: 180_000 }, () => {
  const fx = restartableRelay('ptr-agent-commands-');
  let termId = '';
  let providerId = '';

  /**
   * The terminal's command records three ways: the MCP tool (with each command's output read by
   * its id), `ptyrelay commands`, and the relay API's `commands`.
   */
  const commandViews = async (c: Client) => {
    const mcp = (await call(c, 'terminal_commands', { id: termId })).structuredContent as Structured;
    const outputs: Record<string, string[]> = {};
    for (const cmd of mcp.commands) {
      const read = await call(c, 'terminal_read', { id: termId, command: cmd.id });
      outputs[cmd.id] = (read.structuredContent as Structured).lines;
    }
    const cli = await runCli(['commands', providerId, '--json'], fx.env);
    expect(cli.code, cli.stderr).toBe(0);
    const api = new RelayClient({ url: fx.env.PTYRELAY_URL!, token: fx.token });
    try {
      return { mcp, outputs, cli: JSON.parse(cli.stdout), api: await api.commands(providerId) };
    } finally {
      await api.dispose();
    }
  };

  beforeAll(() => fx.setUp());
  afterAll(() => fx.tearDown());

  it('three commands (one failing) through MCP, `ptyrelay commands` and the relay API; after SIGKILL the same ids and outputs', async () => {
    const c = await fx.agentClient('recorder');
    let before: Awaited<ReturnType<typeof commandViews>>;
    try {
      const opened = await call(c, 'terminal_open', { host: 'local', command: 'bash' });
      expect(opened.isError, JSON.stringify(opened.content)).toBeFalsy();
      termId = (opened.structuredContent as Structured).id;
      providerId = (await listed(c)).find((t) => t.id === termId)!.providerId;
      for (const text of ['echo agent-$((2+3))', 'echo failing; false', `printf 'x\\ny\\n'`])
        await call(c, 'terminal_send', { id: termId, text });
      before = await commandViews(c);
    } finally {
      await c.close();
    }
    const { mcp, outputs, cli, api } = before;
    expect(mcp).toMatchObject({ available: true, total: 3 });
    expect(mcp.commands.map((x: Structured) => [x.id, x.commandLine, x.exitCode])).toEqual([
      ['c3', `printf 'x\\ny\\n'`, 0],
      ['c2', 'echo failing; false', 1],
      ['c1', 'echo agent-$((2+3))', 0],
    ]);
    expect(outputs).toEqual({ c1: ['agent-5'], c2: ['failing'], c3: ['x', 'y'] });
    expect(cli).toEqual({ id: providerId, ...mcp });
    expect(api).toEqual(mcp);

    await fx.stop('SIGKILL');
    await fx.start();
    const again = await fx.agentClient('recorder');
    try {
      await fx.adopted(again, termId);
      // The stub kept the records: a new relay just asks, and gets the same ids, lines and outputs.
      expect(await commandViews(again)).toEqual(before);
      const sent = await call(again, 'terminal_send', { id: termId, text: 'echo after' });
      expect((sent.structuredContent as Structured).commandIds).toEqual(['c4']);
      await call(again, 'terminal_close', { id: termId });
    } finally {
      await again.close();
    }
  });
});
