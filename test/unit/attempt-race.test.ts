import { describe, expect, it } from 'vitest';
import { AttemptRace, type RaceAttempt } from '../../relay/stub-link/attempt-race.js';

/** One started attempt, settled by hand. */
interface Fake {
  attempt: RaceAttempt;
  resolve: (v: string) => void;
  reject: (e: Error) => void;
}

/** A race over hand-settled attempts, with a clock the test moves. */
function harness(maxConcurrent: number) {
  const clock = { t: 0 };
  const started: Fake[] = [];
  const wins: string[] = [];
  const fails: string[] = [];
  const discarded: string[] = [];
  const race = new AttemptRace<string>(
    (attempt) =>
      new Promise<string>((resolve, reject) => {
        started.push({ attempt, resolve, reject });
      }),
    {
      maxConcurrent,
      stallMs: 400,
      now: () => clock.t,
      onWin: (v) => wins.push(v),
      onFail: (e) => fails.push(e.message),
      discard: (v) => discarded.push(v),
    },
  );
  return { race, clock, started, wins, fails, discarded };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('AttemptRace', () => {
  it('races a stalled attempt: the fresh one wins, the stalled one is aborted and its late result discarded', async () => {
    const h = harness(3);
    expect(h.race.step()).toEqual({ kind: 'started' });
    h.clock.t = 250;
    // The first attempt never heard from its host (a blackholed handshake): a fresh one starts beside it.
    expect(h.race.step()).toEqual({ kind: 'started' });
    expect(h.race.pending).toBe(2);
    const [stalled, fresh] = h.started;
    fresh.resolve('fresh');
    await settle();
    expect(h.wins).toEqual(['fresh']);
    expect(stalled.attempt.signal.aborted).toBe(true);
    expect(h.race.pending).toBe(0);
    // Whatever the stalled attempt does afterwards changes nothing: it cannot win, failing is not reported.
    expect(() => stalled.attempt.claim()).toThrow(/another attempt won/);
    stalled.resolve('stalled');
    await settle();
    expect(h.wins).toEqual(['fresh']);
    expect(h.discarded).toEqual(['stalled']);
    expect(h.fails).toEqual([]);
    expect(h.race.step()).toEqual({ kind: 'busy' });
  });

  it('does not race an attempt that is making progress, and waits until it has been silent long enough', () => {
    const h = harness(3);
    h.race.step();
    h.clock.t = 100;
    h.started[0].attempt.progress();
    h.clock.t = 250;
    expect(h.race.step()).toEqual({ kind: 'wait', untilMs: 500 });
    expect(h.race.pending).toBe(1);
    h.clock.t = 500;
    expect(h.race.step()).toEqual({ kind: 'started' });
  });

  it('keeps at most maxConcurrent attempts: the oldest stalled one gives way to a fresh one', () => {
    const h = harness(3);
    for (let i = 0; i < 3; i++) {
      h.clock.t = i * 400;
      expect(h.race.step()).toEqual({ kind: 'started' });
    }
    h.clock.t = 1200;
    expect(h.race.step()).toEqual({ kind: 'started' });
    expect(h.race.pending).toBe(3);
    expect(h.started.map((f) => f.attempt.signal.aborted)).toEqual([true, false, false, false]);
  });

  it('with one slot, a step waits for the pending attempt instead of abandoning it', async () => {
    const h = harness(1);
    h.race.step();
    h.clock.t = 5000;
    expect(h.race.step()).toEqual({ kind: 'busy' });
    expect(h.started[0].attempt.signal.aborted).toBe(false);
    h.started[0].reject(new Error('refused'));
    await settle();
    expect(h.fails).toEqual(['refused']);
    expect(h.race.step()).toEqual({ kind: 'started' });
  });

  it('an explicit claim aborts the others at once; a winner that fails afterwards reopens the race', async () => {
    const h = harness(3);
    h.race.step();
    h.clock.t = 400;
    h.race.step();
    const [a, b] = h.started;
    b.attempt.claim();
    expect(a.attempt.signal.aborted).toBe(true);
    expect(b.attempt.signal.aborted).toBe(false);
    expect(h.race.step()).toEqual({ kind: 'busy' });
    a.reject(new Error('aborted attempt failed'));
    b.reject(new Error('reattach failed'));
    await settle();
    expect(h.fails).toEqual(['reattach failed']);
    expect(h.race.step()).toEqual({ kind: 'started' });
    h.started[2].resolve('third');
    await settle();
    expect(h.wins).toEqual(['third']);
  });

  it('abandon aborts every pending attempt and reports nothing more', async () => {
    const h = harness(3);
    h.race.step();
    h.clock.t = 400;
    h.race.step();
    h.race.abandon();
    expect(h.started.every((f) => f.attempt.signal.aborted)).toBe(true);
    expect(() => h.started[0].attempt.claim()).toThrow();
    h.started[0].resolve('late');
    h.started[1].reject(new Error('closed'));
    await settle();
    expect(h.wins).toEqual([]);
    expect(h.fails).toEqual([]);
    expect(h.discarded).toEqual(['late']);
    expect(h.race.step()).toEqual({ kind: 'busy' });
  });
});
