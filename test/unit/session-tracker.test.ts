import { describe, expect, it } from 'vitest';
import { SessionTracker } from '../../relay/stub-link/session-tracker.js';

const b = (s: string) => Buffer.from(s);

describe('SessionTracker', () => {
  it('delivers contiguous chunks, drops duplicates and trims overlaps by seq', () => {
    const t = new SessionTracker();
    t.set('h/pty-1', 'h', 'pty-1', 'inc-1', 0);
    expect(t.accept('h/pty-1', 'inc-1', 0, b('hello'))?.data.toString()).toBe('hello');
    expect(t.accept('h/pty-1', 'inc-1', 0, b('hello'))).toBeUndefined();
    const overlap = t.accept('h/pty-1', 'inc-1', 3, b('lo world'));
    expect(overlap?.seq).toBe(5);
    expect(Buffer.from(overlap!.data).toString()).toBe(' world');
    expect(t.get('h/pty-1')?.seq).toBe(11);
  });

  it('drops every event of a stale incarnation', () => {
    const t = new SessionTracker();
    t.set('h/pty-1', 'h', 'pty-1', 'old', 0);
    t.set('h/pty-1', 'h', 'pty-1', 'new', 0);
    expect(t.accept('h/pty-1', 'old', 0, b('x'))).toBeUndefined();
    expect(t.markExit('h/pty-1', 'old')).toBe(false);
    expect(t.isCurrent('h/pty-1', 'new')).toBe(true);
    expect(t.markExit('h/pty-1', 'new')).toBe(true);
    expect(t.markExit('h/pty-1', 'new')).toBe(false);
  });

  it('keeps the exit-delivered flag when the same incarnation is re-attached', () => {
    const t = new SessionTracker();
    t.set('h/pty-2', 'h', 'pty-2', 'i', 0);
    t.markExit('h/pty-2', 'i');
    t.set('h/pty-2', 'h', 'pty-2', 'i', 10);
    expect(t.markExit('h/pty-2', 'i')).toBe(false);
    expect(t.ofHost('h').map((x) => x.id)).toEqual(['h/pty-2']);
  });
});
