import { describe, expect, it } from 'vitest';
import {
  WARM_UP_MAX_MS,
  WARM_UP_PINGS,
  type WarmableLink,
  warmUpLink,
} from '../../relay/ssh/link-warm-up.js';

/**
 * A link whose pings answer after `rtt(n)` ms of a fake clock (pure unit: the warm-up's stopping
 * rules; the real link's warm-up is tested in test/integration/ssh-link-warm-up.test.ts).
 */
function fakeLink(rtt: (n: number) => number = () => 0.3) {
  let clock = 0;
  const link = {
    isOpen: true,
    inputFrames: 0,
    sent: 0,
    /** Called before each ping answers: a test may count input or close the link here. */
    onPing: (_n: number) => {},
    ping(): Promise<number> {
      if (!this.isOpen) return Promise.reject(new Error('closed'));
      const n = ++this.sent;
      this.onPing(n);
      if (!this.isOpen) return Promise.reject(new Error('closed'));
      const ms = rtt(n);
      clock += ms;
      return Promise.resolve(ms);
    },
  };
  return { link: link as typeof link & WarmableLink, now: () => clock };
}

describe('link warm-up', () => {
  it('sends one ping at a time until the budget is spent, and the budget is shared by later links', async () => {
    const budget = { left: WARM_UP_PINGS };
    const a = fakeLink();
    let inFlight = 0;
    let most = 0;
    const ping = a.link.ping.bind(a.link);
    a.link.ping = async () => {
      most = Math.max(most, ++inFlight);
      const r = await ping();
      inFlight--;
      return r;
    };
    expect(await warmUpLink(a.link, budget, a.now)).toMatchObject({ pings: WARM_UP_PINGS, end: 'done' });
    expect(a.link.sent).toBe(WARM_UP_PINGS);
    expect(most).toBe(1);
    const b = fakeLink();
    expect(await warmUpLink(b.link, budget, b.now)).toMatchObject({ pings: 0, end: 'done' });
    expect(b.link.sent).toBe(0);
  });

  it('stops as soon as the link carries input', async () => {
    const f = fakeLink();
    f.link.onPing = (n) => {
      if (n === 10) f.link.inputFrames++; // a keystroke
    };
    expect(await warmUpLink(f.link, { left: WARM_UP_PINGS }, f.now)).toMatchObject({
      pings: 10,
      end: 'busy',
    });
  });

  it('stops at the time limit', async () => {
    const f = fakeLink(() => 4);
    const r = await warmUpLink(f.link, { left: WARM_UP_PINGS }, f.now);
    expect(r.end).toBe('time');
    expect(r.pings).toBe(Math.ceil(WARM_UP_MAX_MS / 4));
  });

  it('ends quietly when the link closes under it', async () => {
    const f = fakeLink();
    f.link.onPing = (n) => {
      if (n === 5) f.link.isOpen = false;
    };
    expect(await warmUpLink(f.link, { left: WARM_UP_PINGS }, f.now)).toMatchObject({
      pings: 5,
      end: 'closed',
    });
  });

  it('gives up on a ping that never comes back once the time limit has passed', async () => {
    const link: WarmableLink = { isOpen: true, inputFrames: 0, ping: () => new Promise<number>(() => {}) };
    let clock = 0;
    const r = await warmUpLink(link, { left: WARM_UP_PINGS }, () => {
      clock += WARM_UP_MAX_MS / 2 - 1;
      return clock;
    });
    expect(r).toMatchObject({ pings: 1, end: 'time' });
  }, 10_000);
});
