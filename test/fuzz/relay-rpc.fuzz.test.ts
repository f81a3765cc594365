import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../provider/errors.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { open, type TestClient } from '../support/relay-test-support.js';
import { fuzzParams, TEST_TIMEOUT_MS } from './fuzz-options.js';

/** Created only if some string field was run by a shell. */
const MARKER = join(tmpdir(), `ptr-fuzz-marker-${process.pid}`);

/** JSON-RPC codes a reply may carry; −32603 (an untyped exception in a handler) is a bug. */
const EXPECTED_RPC_CODES = new Set([-32700, -32600, -32601, -32602, -32000, -32005]);

const METHODS = [
  'initialize',
  'reconnect',
  'subscribe',
  'createTerminal',
  'disposeTerminal',
  'unsubscribe',
  'dispatchAction',
  'ptyrelay/hello',
  'ptyrelay/hosts',
  'ptyrelay/list',
  'ptyrelay/spawn',
  'ptyrelay/attach',
  'ptyrelay/detach',
  'ptyrelay/resize',
  'ptyrelay/shutdown',
  'ptyrelay/signal',
  'ptyrelay/getCwd',
  'ptyrelay/getForegroundProcess',
  'ptyrelay/hasChildProcesses',
  'ptyrelay/probe',
  'ptyrelay/snapshot',
  'ptyrelay/clear',
  'ptyrelay/pause',
  'ptyrelay/resume',
  'ptyrelay/setBackgrounded',
  'ptyrelay/agentSend',
  'ptyrelay/agentRead',
  'ptyrelay/hostKey',
  'ptyrelay/trustHostKey',
  'ptyrelay/tokenCreate',
  'ptyrelay/tokenList',
  'ptyrelay/tokenRevoke',
  'ptyrelay/ack',
];

/** Strings that would run something if any field reached a shell unquoted. */
const INJECTIONS = [
  `$(touch ${MARKER})`,
  `\`touch ${MARKER}\``,
  `x; touch ${MARKER}`,
  `x\ntouch ${MARKER}\n`,
  `x && touch ${MARKER}`,
  `x | touch ${MARKER}`,
  `=touch ${MARKER}`,
  `x\0$(touch ${MARKER})`,
];
const injection = fc.constantFrom(...INJECTIONS);
/** Ids no healthy terminal has: the fuzz client must not be able to reach the healthy one by luck. */
const fuzzId = fc.oneof(
  fc.constantFrom(
    'local/pty-999999',
    'pty-999998',
    'nohost/pty-1',
    '/',
    '',
    'local/',
    '__proto__/x',
    'constructor',
  ),
  injection,
);
const fuzzString = fc.oneof(
  injection,
  fuzzId,
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.constantFrom(
    'local',
    '__proto__',
    'constructor',
    'toString',
    'ahp-root://',
    'ptyrelay-terminal:/local/pty-999999',
    'ptyrelay-terminal:/constructor/x',
    'SIGTERM',
    'SIGNOPE',
    'read',
    'admin',
    '0.1.0',
    'file:///nonexistent',
    '/nonexistent',
  ),
);
const fuzzNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 2 ** 31, 2 ** 53, 1e308, 65536),
);
/** Commands that never run their arguments through a shell (a shell given `-c` would, as it should). */
const command = fc.constantFrom('/bin/echo', 'true', 'nonexistent-cmd-x', `$(touch ${MARKER})`, '', '/');

const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fuzzString,
    fuzzNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fuzzString, tie('v'), { maxKeys: 3 }),
  ),
})).v;

const FIELDS = [
  'id',
  'channel',
  'host',
  'args',
  'cwd',
  'env',
  'cols',
  'rows',
  'signal',
  'data',
  'text',
  'name',
  'claim',
  'clientId',
  'protocolVersions',
  'uris',
  'action',
  'clientSeq',
  'fromSeq',
  'seq',
  'immediate',
  'deadlineMs',
  'scope',
  'hosts',
  'terminal',
  'ttl',
  'fingerprint',
  'background',
  'timeoutMs',
  'maxBytes',
  'scrollbackRows',
  'expectedIncarnationId',
];
const paramsArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 5 }),
        fc.option(fuzzId, { nil: undefined, freq: 2 }),
        fc.option(command, { nil: undefined }),
        fc.option(
          fc.dictionary(fuzzString, fuzzString, { maxKeys: 2 }).map((env) => ({ env })),
          { nil: undefined },
        ),
        fc.option(
          fc.record({
            type: fc.constantFrom('terminal/input', 'terminal/resized', 'terminal/claimed', 'x'),
            data: fuzzString,
          }),
          { nil: undefined },
        ),
      )
      .map(([p, id, cmd, env, action]) => ({
        ...(id !== undefined ? { id, channel: `ptyrelay-terminal:/${id}` } : {}),
        ...p,
        ...(cmd !== undefined ? { command: cmd } : {}),
        ...env,
        ...(action ? { action } : {}),
      })),
  },
  { weight: 1, arbitrary: value },
);

/** A request (answered), a notification, raw text or a binary frame; requests get their id when sent. */
type Msg =
  | { kind: 'request' | 'notify'; method: string; params: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'binary'; bytes: Uint8Array };

const messageArb: fc.Arbitrary<Msg> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constantFrom('request' as const, 'notify' as const),
      method: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...METHODS) }, fuzzString),
      params: paramsArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.string({ maxLength: 30 }),
        value.map((v) => JSON.stringify(v) ?? 'null'),
        fc.constantFrom(
          '[]',
          '[{"jsonrpc":"2.0","id":1,"method":"ptyrelay/hosts"}]',
          '{"jsonrpc":"2.0","id":{}}',
        ),
      )
      .map((text): Msg => ({ kind: 'text', text })),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes): Msg => ({ kind: 'binary', bytes })) },
);

interface Reply {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: { code?: string } };
}

/** A connection that records every reply, whatever its id. */
async function fuzzClient(url: string): Promise<{ c: TestClient; replies: Reply[] }> {
  const c = await open(url, { token: TEST_TOKEN });
  // Past the handshakes, so fuzzed requests reach the handlers instead of "initialize first".
  await c.request('initialize', { protocolVersions: ['0.1.0'], clientId: 'fuzz' });
  await c.request('ptyrelay/hello', { clientId: 'fuzz' });
  const replies: Reply[] = [];
  // Before TestClient's own listener, which wakes the waiters.
  c.ws.prependListener('message', (data, isBinary) => {
    if (isBinary) return;
    const m = JSON.parse(String(data));
    if (m.method === undefined) replies.push(m);
  });
  return { c, replies };
}

function checkReply(r: Reply): void {
  if (r.error === undefined) {
    expect(r).toHaveProperty('result');
    return;
  }
  const { code, message, data } = r.error;
  expect(EXPECTED_RPC_CODES.has(code), `unexpected JSON-RPC code ${code}: ${message}`).toBe(true);
  expect(typeof message).toBe('string');
  if (code === -32000) expect(Object.keys(ErrorCodes)).toContain(data?.code);
}

describe('fuzz: JSON-RPC (AHP and ptyrelay/*) over a real relay', () => {
  let fx: RelayFixture;
  let healthy: TestClient;
  let channel: string;
  let round = 0;

  beforeAll(async () => {
    rmSync(MARKER, { force: true });
    fx = await startRelay();
    healthy = await open(fx.url, { token: TEST_TOKEN });
    await healthy.request('initialize', {
      channel: 'ahp-root://',
      protocolVersions: ['0.1.0'],
      clientId: 'healthy',
    });
    ({ channel } = await healthy.request('createTerminal', {
      claim: { kind: 'client', clientId: 'healthy' },
      command: 'bash',
      cwd: `file://${fx.local.home}`,
      cols: 80,
      rows: 24,
    }));
    await healthy.request('subscribe', { channel });
  });

  afterAll(async () => {
    healthy?.close();
    await fx?.cleanup();
    const ran = existsSync(MARKER);
    rmSync(MARKER, { force: true });
    expect(ran, 'a fuzzed string field was run by a shell').toBe(false);
  });

  /** The healthy terminal still echoes: input in, the shell's output back. */
  async function echoRoundTrip(): Promise<void> {
    const n = ++round;
    healthy.notify('dispatchAction', {
      channel,
      clientSeq: n,
      action: { type: 'terminal/input', data: `echo fuzz-${n}-$((40+2))\r` },
    });
    await healthy.waitFor(() => healthy.dataOf(channel).includes(`fuzz-${n}-42`), `echo ${n}`, 10_000);
  }

  it(
    'answers every message with a result or a typed error; the connection, a healthy terminal and the shell stay intact',
    async () => {
      await echoRoundTrip();
      let fz = await fuzzClient(fx.url);
      let nextId = 1;
      await fc.assert(
        fc.asyncProperty(fc.array(messageArb, { minLength: 1, maxLength: 6 }), async (msgs) => {
          if (fz.c.closed || fz.c.ws.readyState !== fz.c.ws.OPEN) fz = await fuzzClient(fx.url);
          const ids: number[] = [];
          for (const m of msgs) {
            if (m.kind === 'binary') fz.c.ws.send(m.bytes, { binary: true });
            else if (m.kind === 'text') fz.c.sendRaw(m.text);
            else if (m.kind === 'notify') fz.c.notify(m.method, m.params);
            else {
              const id = nextId++;
              ids.push(id);
              fz.c.sendRaw(JSON.stringify({ jsonrpc: '2.0', id, method: m.method, params: m.params }));
            }
          }
          // Every request is answered (or the connection was closed on purpose, e.g. a bad initialize).
          await fz.c.waitFor(
            () => fz.c.closed || ids.every((id) => fz.replies.some((r) => r.id === id)),
            `replies to ${ids.join(',')}`,
            10_000,
          );
          const replies = fz.replies.splice(0);
          for (const r of replies) checkReply(r);
          // Only an unsupported protocol version closes the connection (1002), right after its reply.
          if (replies.some((r) => r.error?.code === -32005)) {
            await fz.c.waitFor(() => fz.c.closed, 'close after -32005', 10_000);
            expect(fz.c.closed?.code).toBe(1002);
          } else {
            expect(fz.c.closed).toBeUndefined();
            // The same connection still serves a well-formed request.
            const id = nextId++;
            fz.c.sendRaw(JSON.stringify({ jsonrpc: '2.0', id, method: 'ptyrelay/hosts', params: {} }));
            await fz.c.waitFor(() => fz.replies.find((r) => r.id === id), 'hosts after fuzz', 10_000);
            const r = fz.replies.splice(0).find((x) => x.id === id)!;
            expect(r.error).toBeUndefined();
          }
          await echoRoundTrip();
          expect(existsSync(MARKER), 'a fuzzed string field was run by a shell').toBe(false);
        }),
        fuzzParams('relay rpc', { seed: 18_431, runs: 30, longRuns: 2000, timeMs: 5_000 }),
      );
      fz.c.close();
    },
    TEST_TIMEOUT_MS,
  );
});
