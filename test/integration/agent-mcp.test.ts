import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentStack } from '../../relay/agents/agent-stack.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { validateConfig } from '../../relay/service/config.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { type LocalFixture, startLocal, waitFor } from '../support/local-daemon.js';

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');
const TOKEN = 'agent-mcp-test-token-0123456789abcdef';
const TOOLS = [
  'terminal_close',
  'terminal_commands',
  'terminal_list',
  'terminal_open',
  'terminal_read',
  'terminal_send',
  'terminal_signal',
];

// biome-ignore lint/suspicious/noExplicitAny: structured tool results, checked field by field
type Structured = any;

async function call(c: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await c.callTool({ name, arguments: args })) as CallToolResult;
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

/** The tools through a connected SDK client: open, send (end reason, exit code), read, signal, list, close. */
async function exerciseTools(c: Client, cwd: string): Promise<void> {
  const tools = (await c.listTools()).tools;
  expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
  const send = tools.find((t) => t.name === 'terminal_send')!;
  for (const reason of ['stdin_read', 'inferred_idle', 'timeout', 'session_exit'])
    expect(send.description).toContain(reason);
  expect(send.description).toContain('does NOT mean the command finished');
  expect(tools.find((t) => t.name === 'terminal_read')!.description).toContain('offset = lineEnd');

  const opened = await call(c, 'terminal_open', { host: 'local', command: 'bash', cwd });
  expect(opened.isError).toBeFalsy();
  const id = (opened.structuredContent as Structured).id as string;
  expect(id).toMatch(/^term-\d+$/);
  const sent = await call(c, 'terminal_send', { id, text: 'sleep 1; echo mcp-$((6*7))' });
  const s = sent.structuredContent as Structured;
  expect(s).toMatchObject({ reason: 'stdin_read', exitCode: 0, truncated: false, awaiting: 'prompt' });
  expect(s.output).toMatch(/^mcp-42$/m);
  expect(textOf(sent)).toContain('reason=stdin_read awaiting=prompt exitCode=0');
  expect(textOf(sent)).toContain('Awaiting: the shell prompt.');
  expect(s.commandIds).toEqual(['c1']);

  // The command as a record, and its output by its id.
  const cmds = await call(c, 'terminal_commands', { id });
  const cm = cmds.structuredContent as Structured;
  expect(cm).toMatchObject({ available: true, total: 1 });
  expect(cm.commands).toMatchObject([
    { id: 'c1', commandLine: 'sleep 1; echo mcp-$((6*7))', exitCode: 0, running: false },
  ]);
  expect(cm.commands[0].lineEnd - cm.commands[0].lineBegin).toBe(1);
  expect(textOf(cmds)).toMatch(
    /^c1 {2}exit 0, \d+\.\d s lines \[\d+, \d+\) {2}started .*\$ sleep 1; echo mcp-\$\(\(6\*7\)\)$/m,
  );
  const byCommand = await call(c, 'terminal_read', { id, command: 'c1' });
  expect((byCommand.structuredContent as Structured).lines).toEqual(['mcp-42']);
  expect(textOf(byCommand)).toContain(`${id}: c1 (exit 0`);
  const unknown = await call(c, 'terminal_read', { id, command: 'c7' });
  expect(unknown.isError).toBe(true);
  expect(textOf(unknown)).toMatch(/^NOT_FOUND: .* has no command c7/);

  const read = await call(c, 'terminal_read', { id, count: 3 });
  const r = read.structuredContent as Structured;
  expect(r.lineBegin).toBe(0);
  expect(r.lineEnd).toBe(r.lines.length);
  expect(r.lines.join('\n')).toContain('mcp-42');
  // The whole log by absolute line, forward from the first line.
  expect(r.logLines).toBeGreaterThan(0);
  const byLine = await call(c, 'terminal_read', { id, from: 0, count: 100 });
  const b = byLine.structuredContent as Structured;
  expect(b).toMatchObject({ lineBegin: 0, historyStartLine: 0, totalLines: r.logLines });
  expect(b.lines.join('\n')).toMatch(/^mcp-42$/m);
  expect(textOf(byLine)).toContain(`${id}: log lines [0, ${b.lineEnd}) of ${b.totalLines}`);

  // Agent terminals do not page, unless terminal_open's env sets a pager variable.
  const pagers = `printf '<%s>' "$GIT_PAGER" "$MANPAGER" "$MARK"; echo`;
  expect((await call(c, 'terminal_send', { id, text: pagers })).structuredContent).toMatchObject({
    output: expect.stringMatching(/^<cat><cat><>$/m),
  });
  const own = (
    (await call(c, 'terminal_open', { command: 'bash', env: { GIT_PAGER: 'more', MARK: 'via-env' } }))
      .structuredContent as Structured
  ).id as string;
  const ownVars = (await call(c, 'terminal_send', { id: own, text: pagers })).structuredContent as Structured;
  expect(ownVars.output).toMatch(/^<more><[^>]*><via-env>$/m);
  expect(ownVars.output).not.toMatch(/^<more><cat>/m);
  await call(c, 'terminal_close', { id: own });

  const pending = call(c, 'terminal_send', { id, text: 'sleep 100', timeoutMs: 60_000 });
  await new Promise((res) => setTimeout(res, 300));
  const busy = await call(c, 'terminal_send', { id, text: 'echo again' });
  expect(busy.isError).toBe(true);
  expect(textOf(busy)).toContain(`SEND_IN_PROGRESS: ${id}`);
  expect(textOf(await call(c, 'terminal_list'))).toContain(`${id}  host=local sending`);
  expect(textOf(await call(c, 'terminal_signal', { id }))).toBe(`sent SIGINT to ${id}`);
  expect((await pending).structuredContent).toMatchObject({ reason: 'stdin_read', exitCode: 130 });

  const timedOut = await call(c, 'terminal_send', { id, text: 'sleep 30', timeoutMs: 1000 });
  expect(timedOut.structuredContent).toMatchObject({ reason: 'timeout' });
  expect(textOf(timedOut)).toContain('may still be running');
  await call(c, 'terminal_signal', { id, signal: 'INT' });

  const missing = await call(c, 'terminal_read', { id: 'term-999999' });
  expect(missing.isError).toBe(true);
  expect(textOf(missing)).toMatch(/^NOT_FOUND/);
  expect(textOf(await call(c, 'terminal_close', { id }))).toBe(`closed ${id}`);
  expect(textOf(await call(c, 'terminal_list'))).toBe('no terminals');
}

describe('MCP tools through the SDK client', { timeout: 120_000 }, () => {
  let f: LocalFixture;
  let server: RelayServer;
  let stack: ReturnType<typeof createAgentStack>;
  let router: Awaited<ReturnType<typeof createHostRouter>>;
  let mcpUrl: URL;

  beforeAll(async () => {
    // A long idle threshold: on a loaded machine a slow bash start must not end a send early.
    f = await startLocal(['--agent-idle-ms', '20000']);
    router = await createHostRouter(validateConfig({ agents: { ownerGraceMs: 1500 } }), {
      localRuntimeDir: f.runtimeDir,
    });
    const registry = new TerminalRegistry();
    stack = createAgentStack({ router, registry, agents: { ownerGraceMs: 1500 }, token: TOKEN });
    server = await startRelayServer({
      listen: { host: '127.0.0.1', port: 0 },
      token: TOKEN,
      router,
      registry,
      extensions: [createPtyExtension({ router, registry })],
      httpRoutes: [stack.mcp.handle],
    });
    mcpUrl = new URL(`${server.httpUrl}/mcp`);
  });
  afterAll(async () => {
    await stack?.close();
    await server?.close();
    await router?.dispose();
    await f?.cleanup();
  });

  const httpClient = async (headers: Record<string, string>) => {
    const c = new Client({ name: 'agent-mcp-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers } });
    await c.connect(transport);
    return { c, transport };
  };

  it('HTTP /mcp answers 401 without the token (plain fetch and the SDK client)', async () => {
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await fetch(mcpUrl, {
      method: 'POST',
      headers: { authorization: 'Bearer nope' },
      body: '{}',
    });
    expect(wrong.status).toBe(401);
    const c = new Client({ name: 'no-token', version: '1.0.0' });
    await expect(c.connect(new StreamableHTTPClientTransport(mcpUrl))).rejects.toThrow(/401|nauthorized/);
    expect(stack.mcp.sessionCount).toBe(0);
  });

  it('every tool over Streamable HTTP with the token', async () => {
    const { c } = await httpClient({ authorization: `Bearer ${TOKEN}` });
    try {
      await exerciseTools(c, f.home);
    } finally {
      await c.close();
    }
  });

  it('terminals are exact-owner: another session gets NOT_OWNER; a named agent finds its terminals after reconnecting, an unnamed owner loses them after the grace', async () => {
    const a = await httpClient({ authorization: `Bearer ${TOKEN}`, 'x-ptyrelay-agent': 'alice' });
    const id = ((await call(a.c, 'terminal_open', { command: 'bash' })).structuredContent as Structured).id;
    const b = await httpClient({ authorization: `Bearer ${TOKEN}` });
    const stolen = await call(b.c, 'terminal_send', { id, text: 'echo hi' });
    expect(textOf(stolen)).toMatch(/^NOT_OWNER/);
    const bTerm = (await call(b.c, 'terminal_open', { command: 'bash' })).structuredContent as Structured;
    const alive = async (providerId: string) =>
      (await router.providerFor('local').listProcesses()).some((p) => p.id === providerId && !p.exited);
    expect(await alive(bTerm.providerId)).toBe(true);
    // Alice goes away and comes back under the same name: same terminal, still hers.
    await a.transport.terminateSession();
    await a.c.close();
    const again = await httpClient({ authorization: `Bearer ${TOKEN}`, 'x-ptyrelay-agent': 'alice' });
    expect(textOf(await call(again.c, 'terminal_list'))).toContain(id);
    expect((await call(again.c, 'terminal_send', { id, text: 'echo back' })).structuredContent).toMatchObject(
      {
        reason: 'stdin_read',
      },
    );
    // The unnamed session ends: its terminal lives through the grace (1.5 s here), then is closed.
    await b.transport.terminateSession();
    await b.c.close();
    const endedAt = Date.now();
    expect(await alive(bTerm.providerId)).toBe(true);
    await waitFor(async () => !(await alive(bTerm.providerId)), 10_000, 'grace expiry');
    expect(Date.now() - endedAt).toBeGreaterThanOrEqual(1000);
    await call(again.c, 'terminal_close', { id });
    await again.c.close();
  });

  it('`ptyrelay mcp` over stdio bridges to the relay (SDK StdioClientTransport)', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'mcp'],
      env: { ...process.env, PTYRELAY_URL: server.url, PTYRELAY_TOKEN: TOKEN, HOME: f.home } as Record<
        string,
        string
      >,
      stderr: 'pipe',
    });
    const before = stack.mcp.sessionCount;
    const c = new Client({ name: 'stdio-test', version: '1.0.0' });
    await c.connect(transport);
    expect(stack.mcp.sessionCount).toBe(before + 1);
    try {
      await exerciseTools(c, f.home);
    } finally {
      await c.close();
    }
    // Closing stdin ended the relay-side MCP session.
    await waitFor(() => stack.mcp.sessionCount === before, 5000, 'session closed');
  });

  it('`ptyrelay mcp --embedded` runs the relay in-process over stdio and closes its terminals on exit', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ptr-mcp-emb-'));
    const runtimeDir = join(root, 'run');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'mcp', '--embedded'],
      env: {
        ...process.env,
        HOME: f.home,
        PTYRELAY_RUNTIME_DIR: runtimeDir,
        PTYRELAY_LOG_LEVEL: 'silent',
      } as Record<string, string>,
      stderr: 'pipe',
    });
    // The embedded relay reads this config and passes agents.* to the daemon it starts.
    mkdirSync(join(f.home, '.config', 'ptyrelay'), { recursive: true });
    writeFileSync(
      join(f.home, '.config', 'ptyrelay', 'config.json'),
      JSON.stringify({ agents: { inferredIdleMs: 20000 } }),
    );
    const c = new Client({ name: 'embedded-test', version: '1.0.0' });
    await c.connect(transport);
    const local = new LocalPtyProvider({ runtimeDir });
    try {
      await exerciseTools(c, f.home);
      const opened = ((await call(c, 'terminal_open', { command: 'bash' })).structuredContent as Structured)
        .id;
      expect(opened).toMatch(/^term-/);
      await c.close();
      await waitFor(
        async () => (await local.listProcesses()).every((p) => p.exited),
        10_000,
        'terminals closed',
      );
    } finally {
      await local.shutdownDaemon().catch(() => {});
      await local.dispose();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('CLI `send` prints the end reason and exit code; `run` exits with the command exit code', async () => {
    const env = { ...process.env, PTYRELAY_URL: server.url, PTYRELAY_TOKEN: TOKEN, HOME: f.home };
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [MAIN, ...args], { env, timeout: 30_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
        );
      });
    const opened = await cli(['open', 'local', '--json', '--', 'bash']);
    const id = JSON.parse(opened.stdout).id as string;
    await cli(['send', id, '', '--wait', '10']);
    const sent = await cli(['send', id, 'echo cli-$((6*7)); false']);
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(/^cli-42$/m);
    expect(sent.stderr).toContain('ptyrelay: stdin_read (exit code 1), awaiting prompt: ');
    // A terminal a person opened gets no pager settings.
    const vars = await cli(['send', id, `printf '<%s>' "\${GIT_PAGER-unset}" "\${MANPAGER-unset}"; echo`]);
    expect(vars.stdout).toMatch(/^<[^>]*><[^>]*>$/m);
    expect(vars.stdout).not.toMatch(/^<cat><cat>$/m);
    const slow = await cli(['send', id, 'sleep 30', '--wait', '1']);
    expect(slow.code).toBe(3);
    expect(slow.stderr).toContain('ptyrelay: timeout');
    await cli(['kill', id, '--now']);
    const ok = await cli(['run', 'local', '--', 'sh', '-c', 'echo run-out; exit 5']);
    expect(ok.code).toBe(5);
    expect(ok.stdout).toContain('run-out');
    expect((await cli(['run', 'local', '--', 'true'])).code).toBe(0);
  });
});
