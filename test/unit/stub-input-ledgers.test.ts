import { describe, expect, it } from 'vitest';
import { StubInputLedgers } from '../../agent-stub/daemon/stub-input-ledgers.js';

describe('StubInputLedgers (the daemon side of exactly-once input)', () => {
  it('takes each input seq of a link once, in any link, and tells the acknowledged high water', () => {
    const l = new StubInputLedgers();
    expect(l.takeLink('relay-A:e1', 1)).toBe(true);
    expect(l.takeLink('relay-A:e1', 2)).toBe(true);
    expect(l.takeLink('relay-A:e1', 2)).toBe(false);
    expect(l.takeLink('relay-A:e1', 1)).toBe(false);
    // A gap is fine: the relay skipped numbers it refused.
    expect(l.takeLink('relay-A:e1', 5)).toBe(true);
    expect(l.linkUpTo('relay-A:e1')).toBe(5);
    // Another link has its own numbering.
    expect(l.linkUpTo('relay-B:e2')).toBe(0);
    expect(l.takeLink('relay-B:e2', 1)).toBe(true);
  });

  it("remembers a client's own input seqs per terminal, whichever link applied them", () => {
    const l = new StubInputLedgers();
    expect(l.originApplied('client-1', 'pty-1', 7)).toBe(false);
    l.noteOrigin('client-1', 'pty-1', 7);
    expect(l.originApplied('client-1', 'pty-1', 7)).toBe(true);
    expect(l.originApplied('client-1', 'pty-1', 6)).toBe(true);
    expect(l.originApplied('client-1', 'pty-1', 8)).toBe(false);
    // Per terminal and per client: the same numbers elsewhere are new.
    expect(l.originApplied('client-1', 'pty-2', 7)).toBe(false);
    expect(l.originApplied('client-2', 'pty-1', 7)).toBe(false);
    // Never lowered.
    l.noteOrigin('client-1', 'pty-1', 3);
    expect(l.originApplied('client-1', 'pty-1', 7)).toBe(true);
  });

  it('forgets the least recently used sequence spaces first, beyond 4096', () => {
    const l = new StubInputLedgers();
    l.noteOrigin('oldest', 'pty-1', 1);
    l.noteOrigin('kept', 'pty-1', 1);
    for (let i = 0; i < 4094; i++) l.noteOrigin(`c${i}`, 'pty-1', 1);
    l.noteOrigin('kept', 'pty-1', 2); // used again: now the most recent
    l.noteOrigin('newest', 'pty-1', 1);
    expect(l.originApplied('oldest', 'pty-1', 1)).toBe(false);
    expect(l.originApplied('kept', 'pty-1', 2)).toBe(true);
    expect(l.originApplied('newest', 'pty-1', 1)).toBe(true);
  });
});
