import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyActions, resyncActions } from '../../relay/ahp/resync-actions.js';
import { boundContent, terminalReducer } from '../../relay/ahp/terminal-reducer.js';
import type { TerminalAction, TerminalState } from '../../relay/ahp/types.js';

const text = fc.string({ maxLength: 12 });
const commandId = fc.constantFrom('c1', 'c2', 'c3');
const action: fc.Arbitrary<TerminalAction> = fc.oneof(
  text.map((data) => ({ type: 'terminal/data' as const, data })),
  fc.constant({ type: 'terminal/cleared' as const }),
  fc.record({ type: fc.constant('terminal/titleChanged' as const), title: text }),
  fc.record({ type: fc.constant('terminal/cwdChanged' as const), cwd: text.map((t) => `file:///${t}`) }),
  fc.record({
    type: fc.constant('terminal/resized' as const),
    cols: fc.integer({ min: 1, max: 500 }),
    rows: fc.integer({ min: 1, max: 200 }),
  }),
  fc.record({ type: fc.constant('terminal/exited' as const), exitCode: fc.integer({ min: 0, max: 255 }) }),
  fc.constant({ type: 'terminal/commandDetectionAvailable' as const }),
  fc.record({
    type: fc.constant('terminal/commandExecuted' as const),
    commandId,
    commandLine: text,
    timestamp: fc.integer({ min: 0, max: 2 ** 40 }),
  }),
  fc.record({
    type: fc.constant('terminal/commandFinished' as const),
    commandId,
    exitCode: fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
    durationMs: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
  }),
  fc.record({
    type: fc.constant('terminal/claimed' as const),
    claim: fc.constantFrom(
      { kind: 'client' as const, clientId: 'a' },
      { kind: 'client' as const, clientId: 'b' },
    ),
  }),
);

const initial: TerminalState = { title: '', content: [], claim: { kind: 'client', clientId: 'a' } };

/**
 * What a lagging peer holds and what the server holds: the same terminal's history, the peer's
 * copy stopped somewhere in it (bounded as the server bounds what it serves).
 */
const states = fc.tuple(fc.array(action, { maxLength: 40 }), fc.nat()).map(([actions, cut]) => {
  const reduce = (as: TerminalAction[]) => boundContent(as.reduce(terminalReducer, initial), 64, 8);
  return { client: reduce(actions.slice(0, cut % (actions.length + 1))), server: reduce(actions) };
});

describe('AHP resync actions (a peer that fell out of the action log)', () => {
  it('take an earlier state of the terminal to exactly the server state', () => {
    fc.assert(
      fc.property(states, ({ server, client }) => {
        expect(applyActions(client, resyncActions(server))).toEqual(server);
      }),
      { seed: 20, numRuns: 500 },
    );
  });

  it('start with terminal/cleared, so nothing of the old screen survives', () => {
    const s = applyActions(initial, [{ type: 'terminal/data', data: 'now' }]);
    const actions = resyncActions(s);
    expect(actions[0]).toEqual({ type: 'terminal/cleared' });
    expect(actions).toContainEqual({ type: 'terminal/data', data: 'now' });
  });
});
