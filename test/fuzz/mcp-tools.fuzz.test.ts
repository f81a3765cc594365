import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../provider/errors.js';
import { createAgentStack } from '../../relay/agents/agent-stack.js';
import { validateConfig } from '../../relay/service/config.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { type LocalFixture, startLocal } from '../support/local-daemon.js';
import { fuzzParams, TEST_TIMEOUT_MS } from './fuzz-options.js';

const TOKEN = 'mcp-fuzz-token-0123456789abcdef0123';
/** Created only if some string field reached a shell. */
const MARKER = join(tmpdir(), `ptr-mcp-fuzz-marker-${process.pid}`);

const TOOLS = [
  'terminal_open',
  'terminal_send',
  'terminal_read',
  'terminal_signal',
  'terminal_close',
  'terminal_list',
  'terminal_commands',
];
const FIELDS = [
  'id',
  'host',
  'cwd',
  'command',
  'args',
  'name',
  'text',
  'timeoutMs',
  'enter',
  'offset',
  'count',
  'signal',
  'from',
];
/** MCP (JSON-RPC) codes a thrown call may carry: unknown tool or bad params. An internal error is a bug. */
const EXPECTED_MCP_CODES = new Set([-32602, -32601, -32600]);

const INJECTIONS = [
  `$(touch ${MARKER})`,
  `\`touch ${MARKER}\``,
  `x; touch ${MARKER}`,
  `x\ntouch ${MARKER}\n`,
  `=touch ${MARKER}`,
  `x\0$(touch ${MARKER})`,
];
const injection = fc.constantFrom(...INJECTIONS);
const fuzzString = fc.oneof(
  { weight: 3, arbitrary: injection },
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', 'local', 'term-999999', 'INT', 'NOPE', '/', '/tmp', '~', '__proto__', 'nohost'),
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fuzzString },
  fc.array(fuzzString, { maxLength: 3 }),
  fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -1, 1, 2 ** 53, 1e308)),
  fc.boolean(),
  fc.constant(null),
  fc.dictionary(fuzzString, fuzzString, { maxKeys: 2 }),
);
/** `terminal_open` without a command would start the login shell, which reads its rc files: a program that never uses a shell instead. */
const callArb = fc.record({
  name: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...TOOLS) }, fuzzString),
  args: fc
    .tuple(
      fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 5 }),
      fc.constantFrom('/bin/echo', 'true', `$(touch ${MARKER})`, 'nonexistent-cmd-x'),
    )
    .map(([a, command]) => ({ ...a, command: typeof a.command === 'string' ? a.command : command })),
});

const textOf = (r: object) =>
  (((r as { content?: unknown }).content ?? []) as { type: string; text?: string }[])
    .map((c) => c.text ?? '')
    .join('');

describe('fuzz: MCP tools over /mcp on a real relay', () => {
  let f: LocalFixture;
  let server: RelayServer;
  let stack: ReturnType<typeof createAgentStack>;
  let router: Awaited<ReturnType<typeof createHostRouter>>;
  let healthy: Client;
  let fuzz: Client;
  let healthyId: string;
  let round = 0;

  const connect = async (name: string) => {
    const c = new Client({ name, version: '1.0.0' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${server.httpUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    return c;
  };

  beforeAll(async () => {
    rmSync(MARKER, { force: true });
    f = await startLocal();
    router = await createHostRouter(validateConfig({}), { localRuntimeDir: f.runtimeDir });
    const registry = new TerminalRegistry();
    stack = createAgentStack({ router, registry, token: TOKEN });
    server = await startRelayServer({
      listen: { host: '127.0.0.1', port: 0 },
      token: TOKEN,
      router,
      registry,
      httpRoutes: [stack.mcp.handle],
    });
    healthy = await connect('healthy');
    fuzz = await connect('fuzz');
    const opened = await healthy.callTool({ name: 'terminal_open', arguments: { command: 'cat' } });
    healthyId = (opened.structuredContent as { id: string }).id;
  });

  afterAll(async () => {
    await fuzz?.close();
    await healthy?.close();
    await stack?.close();
    await server?.close();
    await router?.dispose();
    await f?.cleanup();
    const ran = existsSync(MARKER);
    rmSync(MARKER, { force: true });
    expect(ran, 'a fuzzed string field was run by a shell').toBe(false);
  });

  /** The healthy terminal still types and reads back. */
  async function echoes(): Promise<void> {
    const marker = `mcp-fuzz-${++round}`;
    const sent = await healthy.callTool({
      name: 'terminal_send',
      arguments: { id: healthyId, text: marker, timeoutMs: 5000 },
    });
    expect(sent.isError, textOf(sent)).toBeFalsy();
    expect(textOf(sent)).toContain(marker);
  }

  it(
    'answers every tool call with a result or a typed error; nothing runs; the healthy terminal keeps working',
    async () => {
      await echoes();
      await fc.assert(
        fc.asyncProperty(fc.array(callArb, { minLength: 1, maxLength: 4 }), async (calls) => {
          for (const call of calls) {
            // A send waits for its end; fuzzed ones are cut short so a run stays bounded.
            const args = call.name === 'terminal_send' ? { ...call.args, timeoutMs: 300 } : call.args;
            let result: Awaited<ReturnType<Client['callTool']>> | undefined;
            try {
              result = await fuzz.callTool({ name: call.name, arguments: args });
            } catch (err) {
              expect(err).toBeInstanceOf(McpError);
              expect(EXPECTED_MCP_CODES.has((err as McpError).code), String(err)).toBe(true);
              continue;
            }
            if (!result.isError) continue;
            const text = textOf(result);
            // A ptyrelay error names its code; the SDK's own input validation names -32602.
            const code = /^([A-Z_]+): /.exec(text)?.[1];
            if (code !== undefined) expect(Object.keys(ErrorCodes), text).toContain(code);
            else expect(text, 'an untyped tool error').toMatch(/MCP error -32602|Input validation error/);
          }
          await echoes();
          expect(existsSync(MARKER), 'a fuzzed string field was run by a shell').toBe(false);
        }),
        fuzzParams('mcp tools', { seed: 19_211, runs: 25, longRuns: 2000, timeMs: 5_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
