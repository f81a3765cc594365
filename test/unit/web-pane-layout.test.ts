import { describe, expect, it } from 'vitest';
import { PaneLayout } from '../../web/pane-layout.js';

describe('PaneLayout (which terminals the page shows)', () => {
  it('splits the active terminal beside the one used before it, and a new one takes the active slot', () => {
    const l = new PaneLayout();
    const open = new Set(['a', 'b', 'c']);
    expect(l.toggleSplit((x) => open.has(x))).toBe(false); // nothing active yet
    l.activate('a');
    expect(l.toggleSplit((x) => open.has(x))).toBe(false); // no second terminal used yet
    l.activate('b');
    expect(l.toggleSplit((x) => open.has(x))).toBe(true);
    expect(l.pair).toEqual(['a', 'b']);
    expect([...l.shown()]).toEqual(['a', 'b']);
    l.activate('c'); // replaces the active one (b, right)
    expect(l.pair).toEqual(['a', 'c']);
    expect(l.toggleSplit((x) => open.has(x))).toBe(true);
    expect([...l.shown()]).toEqual(['c']);
  });

  it('closing the active terminal activates the one used before it and ends a split that held it', () => {
    const l = new PaneLayout();
    l.activate('a');
    l.activate('b');
    l.toggleSplit(() => true);
    expect(l.forget('b')).toBe('a');
    expect(l.pair).toBeUndefined();
    expect(l.active).toBeUndefined();
    expect(l.forget('zzz')).toBeUndefined();
  });
});
