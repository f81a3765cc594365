import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ActionLog, entryText } from '../../relay/ahp/action-log.js';
import { SLAB_BYTES } from '../../relay/ahp/output-arena.js';
import { rootReducer } from '../../relay/ahp/root-catalog.js';
import { type RawSegment, TerminalChannel } from '../../relay/ahp/terminal-channel.js';
import { boundContent, terminalReducer } from '../../relay/ahp/terminal-reducer.js';
import type { TerminalAction, TerminalState } from '../../relay/ahp/types.js';
import { parseTerminalUri, pathToUri, terminalUri, uriToPath } from '../../relay/ahp/uris.js';
import { negotiateProtocolVersion } from '../../relay/ahp/version.js';

const claim = { kind: 'client', clientId: 'c1' } as const;

function base(): TerminalState {
  return { title: 'sh', cols: 80, rows: 24, content: [], claim };
}

function run(actions: TerminalAction[], s = base()): TerminalState {
  return actions.reduce(terminalReducer, s);
}

describe('terminalReducer (AHP terminal channel spec)', () => {
  it('terminal/data appends to an unclassified tail part, or starts one', () => {
    const s = run([
      { type: 'terminal/data', data: 'a' },
      { type: 'terminal/data', data: 'b' },
    ]);
    expect(s.content).toEqual([{ type: 'unclassified', value: 'ab' }]);
  });

  it('terminal/data appends to a running command, and starts a new part after it completes', () => {
    const s = run([
      { type: 'terminal/data', data: '$ ' },
      { type: 'terminal/commandExecuted', commandId: 'x', commandLine: 'ls', timestamp: 5 },
      { type: 'terminal/data', data: 'file\r\n' },
      { type: 'terminal/commandFinished', commandId: 'x', exitCode: 0, durationMs: 3 },
      { type: 'terminal/data', data: '$ ' },
    ]);
    expect(s.content).toEqual([
      { type: 'unclassified', value: '$ ' },
      {
        type: 'command',
        commandId: 'x',
        commandLine: 'ls',
        output: 'file\r\n',
        timestamp: 5,
        isComplete: true,
        exitCode: 0,
        durationMs: 3,
      },
      { type: 'unclassified', value: '$ ' },
    ]);
    expect(s.supportsCommandDetection).toBe(true);
  });

  it('terminal/input changes nothing (same object)', () => {
    const s = base();
    expect(terminalReducer(s, { type: 'terminal/input', data: 'ls\r' })).toBe(s);
  });

  it('terminal/resized, claimed, titleChanged, cwdChanged, exited set their fields', () => {
    const s = run([
      { type: 'terminal/resized', cols: 120, rows: 40 },
      { type: 'terminal/claimed', claim: { kind: 'session', session: 'ahp-session:/s1' } },
      { type: 'terminal/titleChanged', title: 'vim' },
      { type: 'terminal/cwdChanged', cwd: 'file:///tmp' },
      { type: 'terminal/exited', exitCode: 3 },
    ]);
    expect(s).toMatchObject({
      cols: 120,
      rows: 40,
      claim: { kind: 'session', session: 'ahp-session:/s1' },
      title: 'vim',
      cwd: 'file:///tmp',
      exitCode: 3,
    });
  });

  it('terminal/cleared resets content to []', () => {
    const s = run([{ type: 'terminal/data', data: 'x' }, { type: 'terminal/cleared' }]);
    expect(s.content).toEqual([]);
  });

  it('terminal/commandDetectionAvailable sets supportsCommandDetection', () => {
    expect(run([{ type: 'terminal/commandDetectionAvailable' }]).supportsCommandDetection).toBe(true);
  });

  it('terminal/commandFinished for an unknown command id changes no part', () => {
    const s = run([{ type: 'terminal/data', data: 'x' }]);
    const t = terminalReducer(s, { type: 'terminal/commandFinished', commandId: 'nope', exitCode: 1 });
    expect(t.content).toEqual(s.content);
  });

  it('ignores unknown action types', () => {
    const s = base();
    expect(terminalReducer(s, { type: 'terminal/fancyNew' } as unknown as TerminalAction)).toBe(s);
  });

  it('is pure: the input state is not modified', () => {
    const s = run([{ type: 'terminal/data', data: 'a' }]);
    const frozen = JSON.stringify(s);
    terminalReducer(s, { type: 'terminal/data', data: 'b' });
    terminalReducer(s, { type: 'terminal/cleared' });
    expect(JSON.stringify(s)).toBe(frozen);
  });
});

describe('boundContent', () => {
  it('keeps the last N code units, dropping and cutting old parts', () => {
    const s = run([
      { type: 'terminal/data', data: 'aaaaaaaaaa' },
      { type: 'terminal/commandExecuted', commandId: '1', commandLine: '', timestamp: 0 },
      { type: 'terminal/data', data: 'bbbbbbbbbb' },
      { type: 'terminal/commandFinished', commandId: '1' },
      { type: 'terminal/data', data: 'cccccccccc' },
    ]);
    const b = boundContent(s, 15);
    expect(b.content).toEqual([
      expect.objectContaining({ type: 'command', output: 'bbbbb' }),
      { type: 'unclassified', value: 'cccccccccc' },
    ]);
    expect(boundContent(s, 1000)).toBe(s);
    expect(boundContent(s, 1000, 2).content).toHaveLength(2);
  });
});

describe('root reducer', () => {
  it('root/terminalsChanged replaces the catalog whole', () => {
    const t = [{ resource: 'ptyrelay-terminal:/local/pty-1', title: 'a', claim }];
    const s = rootReducer(
      { agents: [], terminals: [{ ...t[0]!, title: 'old' }], unavailableHosts: [] },
      {
        type: 'root/terminalsChanged',
        terminals: t,
      },
    );
    expect(s.terminals).toEqual(t);
  });

  it('root/hostsChanged replaces the hosts that are down, terminals untouched', () => {
    const t = [{ resource: 'ptyrelay-terminal:/local/pty-1', title: 'a', claim }];
    const down = [{ host: 'box', status: 'unreachable' as const, reason: 'refused' }];
    const s = rootReducer(
      { agents: [], terminals: t, unavailableHosts: [] },
      { type: 'root/hostsChanged', unavailableHosts: down },
    );
    expect(s).toEqual({ agents: [], terminals: t, unavailableHosts: down });
  });
});

describe('protocol version negotiation', () => {
  it('accepts a caret-compatible version and returns the exact offered string', () => {
    expect(negotiateProtocolVersion(['0.1.0'])).toBe('0.1.0');
    expect(negotiateProtocolVersion(['2.0.0', '0.1.3', '0.1.1'])).toBe('0.1.3');
  });
  it('refuses incompatible or malformed versions', () => {
    expect(negotiateProtocolVersion(['0.2.0', '1.0.0'])).toBeUndefined();
    expect(negotiateProtocolVersion(['0.0.9'])).toBeUndefined();
    expect(negotiateProtocolVersion(['v0.1.0', '0.1', '0.1.0-beta'])).toBeUndefined();
    expect(negotiateProtocolVersion('0.1.0')).toBeUndefined();
  });
});

describe('ActionLog', () => {
  it('numbers envelopes strictly increasing and replays what it still holds', () => {
    const log = new ActionLog(3, 1 << 20, 0);
    for (let i = 0; i < 5; i++) log.append('c', { type: 'terminal/data', data: String(i) });
    expect(log.serverSeq).toBe(5);
    expect(log.since(2)?.map((e) => e.envelope.serverSeq)).toEqual([3, 4, 5]);
    expect(log.since(1)).toBeUndefined(); // seq 2 was evicted
    expect(log.since(5)).toEqual([]);
    expect(log.since(6)).toBeUndefined(); // from the future (another server process)
  });
  it('evicts by bytes too', () => {
    // An output envelope counts its data's UTF-8 bytes plus 128 until a peer builds its text.
    const one = 300 + 128;
    const log = new ActionLog(1000, one + 100, 0);
    log.append('c', { type: 'terminal/data', data: 'x'.repeat(300) });
    log.append('c', { type: 'terminal/data', data: 'y'.repeat(300) });
    expect(log.since(0)).toBeUndefined();
    expect(log.since(1)?.length).toBe(1);
    expect(log.heldBytes).toBe(one);
  });
  it('keeps an output envelope as UTF-8 off the heap, then only as its shared text, and reads it back whole', () => {
    const log = new ActionLog(1000, 1 << 20);
    const data = 'x'.repeat(1000) + 'é\u001b[0m';
    const e = log.append('c', { type: 'terminal/data', data }, { clientId: 'a', clientSeq: 3 });
    // Only the data, as UTF-8, until a JSON peer needs the text (raw-data peers never do); the
    // log moves it off the heap when the next envelope comes.
    expect(log.heldBytes).toBe(Buffer.byteLength(data) + 128);
    expect(e.envelope.action).toEqual({ type: 'terminal/data', data });
    e.settle();
    expect(log.heldBytes).toBe(Buffer.byteLength(data) + 128);
    expect(e.envelope.action).toEqual({ type: 'terminal/data', data });
    const text = entryText(e, log);
    expect(Buffer.isBuffer(text)).toBe(true);
    expect(log.heldBytes).toBe(text.length + 128);
    expect(JSON.parse(text.toString('utf8'))).toEqual({
      jsonrpc: '2.0',
      method: 'action',
      params: {
        channel: 'c',
        action: { type: 'terminal/data', data },
        serverSeq: e.serverSeq,
        origin: { clientId: 'a', clientSeq: 3 },
      },
    });
    expect(e.envelope.action).toEqual({ type: 'terminal/data', data });
    // The same bytes for every peer, and nothing more counted.
    expect(entryText(e, log)).toBe(text);
    expect(log.heldBytes).toBe(text.length + 128);
  });
  it('counts the shared JSON text of other envelopes toward the cap once a peer built it', () => {
    const log = new ActionLog(1000, 4000);
    const e = log.append('c', { type: 'terminal/titleChanged', title: 't'.repeat(100) });
    const before = log.heldBytes;
    expect(before).toBe(2 * JSON.stringify(e.envelope.action).length + 128);
    const text = entryText(e, log);
    expect(JSON.parse(text.toString('utf8'))).toEqual({
      jsonrpc: '2.0',
      method: 'action',
      params: e.envelope,
    });
    expect(entryText(e, log)).toBe(text);
    expect(log.heldBytes).toBe(before + text.length);
  });
  it("keeps a flood's output in a few reused slabs, and every held envelope reads back whole", async () => {
    // One buffer per envelope died in V8's old generation: a full collection every 5–9 MB of
    // output in a relay passing a flood on (output-arena.ts).
    const budget = 8 * 1024 * 1024;
    const log = new ActionLog(10_000, budget, 0);
    const piece = (i: number) => `${String(i).padStart(8, '0')}é\r\n`.repeat(2900); // ~35 KB
    for (let i = 0; i < 2000; i++) {
      log.append('c', { type: 'terminal/data', data: piece(i) });
      if (i % 16 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(log.arena.slabsAllocated).toBeLessThanOrEqual(budget / SLAB_BYTES + 8);
    const held = log.since(log.oldestSeq - 1) ?? [];
    expect(held.length).toBeGreaterThan(200);
    for (const e of held)
      expect(e.envelope.action).toEqual({ type: 'terminal/data', data: piece(e.serverSeq - 1) });
  });
  it('still reads an envelope evicted in the turn it was held for delivery', () => {
    const log = new ActionLog(1000, 64 * 1024, 0);
    const data = (c: string) => c.repeat(20_000);
    const held = log.append('c', { type: 'terminal/data', data: data('a') });
    // Settled, then evicted within the same turn, as a flood does behind a held peer; its slab
    // empties and two more fill meanwhile.
    for (let i = 0; i < 40; i++) log.append('c', { type: 'terminal/data', data: data(String(i % 10)) });
    expect(log.arena.slabsAllocated).toBeGreaterThanOrEqual(3);
    expect(held.live).toBe(false);
    expect(held.envelope.action).toEqual({ type: 'terminal/data', data: data('a') });
  });
  it('lets go of evicted envelopes at once (they used to stay reachable until compaction)', async () => {
    // The test workers run with --expose-gc (vitest.config.ts).
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error('this test needs node --expose-gc (set in vitest.config.ts)');
    const log = new ActionLog(10_000, 1024 * 1024);
    const ref = new WeakRef(log.append('c', { type: 'terminal/data', data: 'a'.repeat(64 * 1024) }));
    for (let i = 0; i < 40; i++)
      log.append('c', { type: 'terminal/data', data: String(i).repeat(64 * 1024) });
    expect(log.heldBytes).toBeLessThanOrEqual(1024 * 1024);
    expect(log.since(0)).toBeUndefined();
    // A WeakRef keeps its target for the rest of the job that created it.
    await new Promise((r) => setImmediate(r));
    gc();
    expect(ref.deref() === undefined).toBe(true);
  });
});

describe('terminal URIs', () => {
  it('maps provider ids and parses mint requests', () => {
    expect(terminalUri('local/pty-1')).toBe('ptyrelay-terminal:/local/pty-1');
    expect(parseTerminalUri('ptyrelay-terminal:/build1/pty-2')).toEqual({
      host: 'build1',
      id: 'build1/pty-2',
    });
    expect(parseTerminalUri('ptyrelay-terminal:/build1/')).toEqual({ host: 'build1' });
    expect(parseTerminalUri('ahp-terminal:/x')).toBeUndefined();
    expect(uriToPath(pathToUri('/tmp/a b'))).toBe('/tmp/a b');
  });
});

describe('TerminalChannel event merging', () => {
  it('splits output at fact positions so command output lands in the command part', () => {
    const actions: TerminalAction[] = [];
    const raws: RawSegment[] = [];
    const ch = new TerminalChannel(
      'local/pty-1',
      { id: 'local/pty-1', incarnationId: 'i', title: 't', claim, cols: 80, rows: 24, nextSeq: 0 },
      (c, a, raw) => {
        if (a) {
          c.apply(a);
          actions.push(a);
        }
        if (raw) raws.push(raw);
      },
    );
    const bytes = Buffer.from('$ false\r\n$ ');
    // Data first, then the facts found in it (the stub's order).
    ch.push({ kind: 'data', seq: 0, data: bytes });
    ch.push({ kind: 'fact', seq: 9, fact: { type: 'commandStarted', commandLine: 'false' } });
    ch.push({ kind: 'fact', seq: 9, fact: { type: 'commandFinished', exitCode: 1, durationMs: 2 } });
    ch.push({ kind: 'exit', exitCode: 0 });
    ch.flush();
    expect(actions.map((a) => a.type)).toEqual([
      'terminal/data',
      'terminal/commandExecuted',
      'terminal/commandFinished',
      'terminal/data',
      'terminal/exited',
    ]);
    expect(raws.map((r) => r.seq)).toEqual([0, 9]);
    expect(ch.state.content).toEqual([
      { type: 'unclassified', value: '$ false\r\n' },
      expect.objectContaining({ type: 'command', commandLine: 'false', isComplete: true, exitCode: 1 }),
      { type: 'unclassified', value: '$ ' },
    ]);
    expect(ch.state.exitCode).toBe(0);
  });

  it('decodes UTF-8 split across chunks and drops bytes already seen', () => {
    const out: string[] = [];
    const ch = new TerminalChannel(
      'local/pty-2',
      { id: 'local/pty-2', incarnationId: 'i', title: 't', claim, cols: 80, rows: 24, nextSeq: 2 },
      (_c, a) => {
        if (a?.type === 'terminal/data') out.push(a.data);
      },
    );
    const euro = Buffer.from('ab€', 'utf8'); // € is 3 bytes
    ch.push({ kind: 'data', seq: 0, data: euro.subarray(0, 3) });
    ch.push({ kind: 'data', seq: 3, data: euro.subarray(3) });
    ch.flush();
    expect(out.join('')).toBe('€'); // "ab" was before nextSeq
  });

  it('bounds content: snapshots hold exactly the last `contentLimit` code units', () => {
    const ch = new TerminalChannel(
      'local/pty-3',
      { id: 'local/pty-3', incarnationId: 'i', title: 't', claim, cols: 80, rows: 24, nextSeq: 0 },
      (c, a) => {
        if (a) c.apply(a);
      },
      10,
    );
    let seq = 0;
    for (let i = 0; i < 50; i++) {
      const d = Buffer.from(String(i % 10));
      ch.push({ kind: 'data', seq, data: d });
      seq += d.length;
    }
    ch.flush();
    expect(ch.snapshotState().content).toEqual([{ type: 'unclassified', value: '0123456789' }]);
    const kept = ch.state.content.map((p) => (p.type === 'unclassified' ? p.value : p.output)).join('');
    expect(kept.length).toBeLessThanOrEqual(20);
  });
  it('gives the snapshot of the whole stream bounded, whatever mix of output, commands and clears it saw', () => {
    const limit = 40;
    const text = fc.string({ unit: fc.constantFrom('a', 'b', '\r\n', '€', '😀'), maxLength: 70 });
    const step = fc.oneof(
      { weight: 6, arbitrary: text.map((data) => ({ type: 'terminal/data', data }) as TerminalAction) },
      {
        weight: 1,
        arbitrary: fc.string({ maxLength: 50 }).map(
          (commandLine) =>
            ({
              type: 'terminal/commandExecuted',
              commandId: 'c',
              commandLine,
              timestamp: 1,
            }) as TerminalAction,
        ),
      },
      {
        weight: 1,
        arbitrary: fc.constant({
          type: 'terminal/commandFinished',
          commandId: 'c',
          exitCode: 0,
        } as TerminalAction),
      },
      { weight: 1, arbitrary: fc.constant({ type: 'terminal/cleared' } as TerminalAction) },
      { weight: 1, arbitrary: fc.constant({ type: 'terminal/titleChanged', title: 't' } as TerminalAction) },
      // A snapshot in the middle of the stream: it folds what was pending.
      { weight: 1, arbitrary: fc.constant(undefined) },
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const ch = new TerminalChannel(
          'local/pty-9',
          { id: 'local/pty-9', incarnationId: 'i', title: 'sh', claim, cols: 80, rows: 24, nextSeq: 0 },
          () => {},
          limit,
        );
        let whole = ch.snapshotState();
        for (const a of steps) {
          if (a === undefined) {
            expect(ch.snapshotState()).toEqual(boundContent(whole, limit));
            continue;
          }
          ch.apply(a);
          whole = terminalReducer(whole, a);
        }
        expect(ch.snapshotState()).toEqual(boundContent(whole, limit));
        // The live state stays within twice the limit plus the last piece of output.
        const live = ch.state.content.reduce(
          (n, p) => n + (p.type === 'command' ? p.output.length + p.commandLine.length : p.value.length),
          0,
        );
        expect(live).toBeLessThanOrEqual(2 * limit + 70 + 50);
      }),
      { numRuns: 400 },
    );
  });
});
