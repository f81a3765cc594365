import { describe, expect, it } from 'vitest';
import { BackgroundVotes } from '../../relay/flow/background-by-viewers.js';

describe('BackgroundVotes', () => {
  it('backgrounds a terminal only when every viewer asked, and says so once per change', () => {
    const v = new BackgroundVotes();
    const [a, b] = [{}, {}];
    expect(v.vote('t', a, false)).toBeUndefined(); // foreground is where terminals start
    expect(v.vote('t', b, false)).toBeUndefined();
    expect(v.vote('t', a, true)).toBeUndefined(); // b still watches
    expect(v.background('t')).toBe(false);
    expect(v.vote('t', b, true)).toBe(true);
    expect(v.vote('t', b, true)).toBeUndefined();
    expect(v.vote('t', a, false)).toBe(false);
  });

  it('re-decides when a viewer leaves, and keeps the state when the last one left', () => {
    const v = new BackgroundVotes();
    const [hidden, watching] = [{}, {}];
    v.vote('t', hidden, true);
    v.vote('u', hidden, true);
    v.vote('t', watching, false);
    expect(v.background('t')).toBe(false);
    expect(v.background('u')).toBe(true);
    expect(v.leave(watching, 't')).toEqual([{ id: 't', background: true }]);
    expect(v.leave(hidden)).toEqual([]); // nobody left: both stay in the background
    expect(v.background('t')).toBe(true);
    v.forget('t');
    expect(v.background('t')).toBe(false);
  });
});
