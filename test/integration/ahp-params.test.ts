import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CLIENT_URI_LENGTH } from '../../relay/ahp/uris.js';
import { fuzzParams, TEST_TIMEOUT_MS } from '../fuzz/fuzz-options.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { open, type TestClient } from '../support/relay-test-support.js';

/**
 * Every AHP method's params are parsed by their schema (relay/ahp/ahp-schemas.ts): malformed
 * params of a request get JSON-RPC −32000 with `data.code` INVALID_ARGUMENT and `data.field`
 * naming the field; a malformed client action comes back to its sender rejected with that error;
 * a malformed notification is dropped. Neither the connection nor a healthy terminal is affected.
 */

const V = ['0.1.0'];
const HUGE = 'x'.repeat(200_000);
const NUL = 'a\0b';
const CLAIM = { kind: 'client', clientId: 'bad' };

/** A valid params object per request method (none is sent whole: one field is always broken). */
const VALID: Record<string, Record<string, unknown>> = {
  initialize: { protocolVersions: V, clientId: 'bad', initialSubscriptions: [], capabilities: {} },
  reconnect: { clientId: 'bad', lastSeenServerSeq: 0, subscriptions: ['ahp-root://'] },
  subscribe: { channel: 'ahp-root://' },
  createTerminal: { claim: CLAIM, command: '/bin/echo', args: ['hi'], cols: 80, rows: 24 },
  disposeTerminal: { channel: 'ahp-terminal:/nothing-here' },
};

/** [method, params, the field `data.field` must name]. */
const CASES: Array<[string, Record<string, unknown>, string]> = [
  ['initialize', { protocolVersions: V }, 'initialize.clientId'],
  ['initialize', { protocolVersions: V, clientId: 5 }, 'initialize.clientId'],
  ['initialize', { protocolVersions: V, clientId: '' }, 'initialize.clientId'],
  ['initialize', { protocolVersions: V, clientId: NUL }, 'initialize.clientId'],
  ['initialize', { protocolVersions: V, clientId: HUGE }, 'initialize.clientId'],
  ['initialize', { clientId: 'bad' }, 'initialize.protocolVersions'],
  ['initialize', { clientId: 'bad', protocolVersions: '0.1.0' }, 'initialize.protocolVersions'],
  ['initialize', { clientId: 'bad', protocolVersions: [1] }, 'initialize.protocolVersions.0'],
  [
    'initialize',
    { ...VALID.initialize, initialSubscriptions: 'ahp-root://' },
    'initialize.initialSubscriptions',
  ],
  ['initialize', { ...VALID.initialize, initialSubscriptions: [null] }, 'initialize.initialSubscriptions.0'],
  ['initialize', { ...VALID.initialize, capabilities: 'raw' }, 'initialize.capabilities'],
  [
    'initialize',
    { ...VALID.initialize, capabilities: { rawData: 'yes' } },
    'initialize.capabilities.rawData',
  ],
  ['initialize', { ...VALID.initialize, channel: 7 }, 'initialize.channel'],
  ['reconnect', { lastSeenServerSeq: 0, subscriptions: [] }, 'reconnect.clientId'],
  ['reconnect', { clientId: 'bad', subscriptions: [] }, 'reconnect.lastSeenServerSeq'],
  ['reconnect', { ...VALID.reconnect, lastSeenServerSeq: '3' }, 'reconnect.lastSeenServerSeq'],
  ['reconnect', { ...VALID.reconnect, lastSeenServerSeq: -1 }, 'reconnect.lastSeenServerSeq'],
  ['reconnect', { ...VALID.reconnect, lastSeenServerSeq: 1.5 }, 'reconnect.lastSeenServerSeq'],
  ['reconnect', { clientId: 'bad', lastSeenServerSeq: 0 }, 'reconnect.subscriptions'],
  ['reconnect', { ...VALID.reconnect, subscriptions: [{}] }, 'reconnect.subscriptions.0'],
  ['reconnect', { ...VALID.reconnect, subscriptions: [HUGE] }, 'reconnect.subscriptions.0'],
  ['subscribe', {}, 'subscribe.channel'],
  ['subscribe', { channel: 5 }, 'subscribe.channel'],
  ['subscribe', { channel: NUL }, 'subscribe.channel'],
  ['subscribe', { channel: 'ahp-root://\n' }, 'subscribe.channel'],
  ['subscribe', { channel: 'x'.repeat(MAX_CLIENT_URI_LENGTH + 1) }, 'subscribe.channel'],
  ['createTerminal', {}, 'createTerminal.claim'],
  ['createTerminal', { claim: 'bad' }, 'createTerminal.claim'],
  ['createTerminal', { claim: { kind: 'x' } }, 'createTerminal.claim.kind'],
  ['createTerminal', { claim: { kind: 'client', clientId: 5 } }, 'createTerminal.claim.clientId'],
  ['createTerminal', { claim: { kind: 'session' } }, 'createTerminal.claim.session'],
  ['createTerminal', { claim: { kind: 'session', session: 's', turnId: 1 } }, 'createTerminal.claim.turnId'],
  ['createTerminal', { ...VALID.createTerminal, cols: '80' }, 'createTerminal.cols'],
  ['createTerminal', { ...VALID.createTerminal, cols: 0 }, 'createTerminal.cols'],
  ['createTerminal', { ...VALID.createTerminal, rows: 1e6 }, 'createTerminal.rows'],
  ['createTerminal', { ...VALID.createTerminal, rows: 2.5 }, 'createTerminal.rows'],
  ['createTerminal', { ...VALID.createTerminal, name: NUL }, 'createTerminal.name'],
  ['createTerminal', { ...VALID.createTerminal, name: HUGE }, 'createTerminal.name'],
  ['createTerminal', { ...VALID.createTerminal, command: 5 }, 'createTerminal.command'],
  ['createTerminal', { ...VALID.createTerminal, command: `/bin/echo${NUL}` }, 'createTerminal.command'],
  ['createTerminal', { ...VALID.createTerminal, args: 'hi' }, 'createTerminal.args'],
  ['createTerminal', { ...VALID.createTerminal, args: ['hi', 2] }, 'createTerminal.args.1'],
  ['createTerminal', { claim: CLAIM, args: ['hi'] }, 'createTerminal.args'],
  ['createTerminal', { ...VALID.createTerminal, cwd: 5 }, 'createTerminal.cwd'],
  ['createTerminal', { ...VALID.createTerminal, cwd: HUGE }, 'createTerminal.cwd'],
  ['createTerminal', { ...VALID.createTerminal, host: 'no such host' }, 'createTerminal.host'],
  ['createTerminal', { ...VALID.createTerminal, host: 5 }, 'createTerminal.host'],
  ['createTerminal', { ...VALID.createTerminal, channel: 5 }, 'createTerminal.channel'],
  [
    'createTerminal',
    { ...VALID.createTerminal, claim: { kind: 'client', clientId: 'other' } },
    'createTerminal.claim.clientId',
  ],
  [
    'createTerminal',
    { ...VALID.createTerminal, channel: 'ptyrelay-terminal:/local/', host: 'h2' },
    'createTerminal.host',
  ],
  ['disposeTerminal', {}, 'disposeTerminal.channel'],
  ['disposeTerminal', { channel: ['ahp-root://'] }, 'disposeTerminal.channel'],
  ['disposeTerminal', { channel: HUGE }, 'disposeTerminal.channel'],
];

/** [action, the field the rejection reason must name]. */
const ACTION_CASES: Array<[Record<string, unknown>, string]> = [
  [{ type: 'terminal/input' }, 'dispatchAction.action.data'],
  [{ type: 'terminal/input', data: 5 }, 'dispatchAction.action.data'],
  [{ type: 'terminal/input', data: null }, 'dispatchAction.action.data'],
  [{ type: 'terminal/resized', cols: 'x', rows: 24 }, 'dispatchAction.action.cols'],
  [{ type: 'terminal/resized', cols: 80 }, 'dispatchAction.action.rows'],
  [{ type: 'terminal/resized', cols: 80, rows: 99_999 }, 'dispatchAction.action.rows'],
  [{ type: 'terminal/claimed' }, 'dispatchAction.action.claim'],
  [
    { type: 'terminal/claimed', claim: { kind: 'client', clientId: NUL } },
    'dispatchAction.action.claim.clientId',
  ],
  [{ type: 'terminal/titleChanged', title: 5 }, 'dispatchAction.action.title'],
  [{ type: 'terminal/titleChanged', title: NUL }, 'dispatchAction.action.title'],
  [{ type: 'terminal/titleChanged', title: HUGE }, 'dispatchAction.action.title'],
];

/** Expects a typed INVALID_ARGUMENT reply naming `field`. */
async function expectInvalid(c: TestClient, method: string, params: unknown, field: string): Promise<void> {
  const r = await c.call(method, params);
  const what = `${method} ${JSON.stringify(params).slice(0, 200)}`;
  expect(r.error, what).toBeDefined();
  expect(r.error?.code, what).toBe(-32000);
  expect(r.error?.data?.code, what).toBe('INVALID_ARGUMENT');
  expect(r.error?.data?.field, what).toBe(field);
  expect(r.error?.message.startsWith(`${field} `), `${what}: ${r.error?.message}`).toBe(true);
}

describe('AHP params over a real relay: one schema per message', () => {
  let fx: RelayFixture;
  let healthy: TestClient;
  let bad: TestClient;
  let channel: string;
  let badChannel: string;
  let round = 0;
  let seq = 0;

  beforeAll(async () => {
    fx = await startRelay();
    healthy = await open(fx.url, { token: TEST_TOKEN });
    await healthy.request('initialize', { protocolVersions: V, clientId: 'healthy' });
    ({ channel } = await healthy.request('createTerminal', {
      claim: { kind: 'client', clientId: 'healthy' },
      command: 'bash',
      cwd: `file://${fx.local.home}`,
    }));
    await healthy.request('subscribe', { channel });
    bad = await open(fx.url, { token: TEST_TOKEN });
    await bad.request('initialize', { protocolVersions: V, clientId: 'bad' });
    ({ channel: badChannel } = await bad.request('createTerminal', { claim: CLAIM, command: 'cat' }));
    await bad.request('subscribe', { channel: badChannel });
  });

  afterAll(async () => {
    healthy?.close();
    bad?.close();
    await fx?.cleanup();
  });

  /** The healthy terminal still echoes, and the bad client's connection still serves requests. */
  async function stillHealthy(): Promise<void> {
    const n = ++round;
    healthy.notify('dispatchAction', {
      channel,
      clientSeq: n,
      action: { type: 'terminal/input', data: `echo ahp-${n}-$((40+2))\r` },
    });
    await healthy.waitFor(() => healthy.dataOf(channel).includes(`ahp-${n}-42`), `echo ${n}`, 10_000);
    expect(bad.closed).toBeUndefined();
    const r = await bad.request('subscribe', { channel: 'ahp-root://' });
    expect(r.snapshot.resource).toBe('ahp-root://');
  }

  it('answers malformed request params with INVALID_ARGUMENT naming the field', async () => {
    for (const [method, params, field] of CASES) await expectInvalid(bad, method, params, field);
    await stillHealthy();
    // Nothing was created by a refused createTerminal: the two terminals of beforeAll only.
    expect(fx.registry.list()).toHaveLength(2);
  }, 60_000);

  it('rejects a malformed client action to its sender, naming the field; echoes only its type', async () => {
    for (const [action, field] of ACTION_CASES) {
      const clientSeq = ++seq;
      bad.notify('dispatchAction', { channel: badChannel, clientSeq, action });
      const rej = await bad.waitEnvelope((e) => e.origin?.clientSeq === clientSeq, `rejection ${clientSeq}`);
      expect(rej.rejectionReason?.startsWith(`INVALID_ARGUMENT: ${field} `), rej.rejectionReason).toBe(true);
      expect(rej.action).toEqual({ type: action.type });
      expect(rej.channel).toBe(badChannel);
    }
    // The healthy client never sees another client's rejections.
    expect(healthy.envelopes.some((e) => e.origin?.clientId === 'bad')).toBe(false);
    await stillHealthy();
  }, 60_000);

  it('drops malformed notifications (no channel or clientSeq to answer) and keeps the subscription', async () => {
    const malformed: Array<[string, unknown]> = [
      ['dispatchAction', { clientSeq: 1, action: { type: 'terminal/input', data: 'x' } }],
      [
        'dispatchAction',
        { channel: badChannel, clientSeq: '1', action: { type: 'terminal/input', data: 'x' } },
      ],
      [
        'dispatchAction',
        { channel: badChannel, clientSeq: -1, action: { type: 'terminal/input', data: 'x' } },
      ],
      ['dispatchAction', { channel: badChannel, clientSeq: 1, action: 'terminal/input' }],
      ['dispatchAction', { channel: badChannel, clientSeq: 1, action: { data: 'x' } }],
      ['dispatchAction', { channel: NUL, clientSeq: 1, action: { type: 'terminal/input', data: 'x' } }],
      ['dispatchAction', { channel: HUGE, clientSeq: 1, action: { type: 'terminal/input', data: 'x' } }],
      ['dispatchAction', []],
      ['unsubscribe', {}],
      ['unsubscribe', { channel: [badChannel] }],
      ['unsubscribe', { channel: { toString: badChannel } }],
      ['unsubscribe', { channel: `${badChannel}\0` }],
    ];
    const rejections = () => bad.envelopes.filter((e) => e.rejectionReason !== undefined).length;
    const before = rejections();
    for (const [method, params] of malformed) bad.notify(method, params);
    await stillHealthy();
    // None of them typed into cat, and the bad client is still subscribed to its terminal.
    const clientSeq = ++seq;
    bad.notify('dispatchAction', {
      channel: badChannel,
      clientSeq,
      action: { type: 'terminal/input', data: 'still-here\r' },
    });
    await bad.waitFor(() => bad.dataOf(badChannel).includes('still-here'), 'cat echoes', 10_000);
    expect(bad.dataOf(badChannel)).not.toContain('x');
    expect(rejections()).toBe(before);
  }, 60_000);

  /** Values that are wrong for every field: wrong types, NUL, longer than any bound. */
  const wrongValue = fc.oneof(
    fc.integer({ max: -1 }),
    fc.double().filter((d) => !Number.isInteger(d)),
    fc.boolean(),
    fc.constant(null),
    fc.constant(HUGE),
    fc.string({ maxLength: 8 }).map((s) => `${s}\0${s}`),
    fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
  );
  /** A valid params object with one field broken (strings are wrong for the number and array fields). */
  const broken = fc
    .constantFrom(...Object.keys(VALID))
    .chain((method) =>
      fc.tuple(fc.constant(method), fc.constantFrom(...Object.keys(VALID[method]!)), wrongValue),
    )
    .filter(([method, field, v]) => {
      // An object is a valid capabilities or claim-less value only by luck; keep the wrong ones.
      if (method === 'initialize' && field === 'capabilities') return typeof v !== 'object' || v === null;
      return true;
    });

  it(
    'property: one broken field of any request is INVALID_ARGUMENT naming that field',
    async () => {
      await fc.assert(
        fc.asyncProperty(broken, async ([method, field, v]) => {
          const r = await bad.call(method, { ...VALID[method], [field]: v });
          expect(r.error?.data?.code, `${method}.${field} = ${JSON.stringify(v)?.slice(0, 40)}`).toBe(
            'INVALID_ARGUMENT',
          );
          const named = String(r.error?.data?.field);
          expect(named === `${method}.${field}` || named.startsWith(`${method}.${field}.`), named).toBe(true);
        }),
        fuzzParams('ahp params', { seed: 20_261_201, runs: 60, longRuns: 2000, timeMs: 5_000 }),
      );
      await stillHealthy();
      expect(fx.registry.list()).toHaveLength(2);
    },
    TEST_TIMEOUT_MS,
  );
});
