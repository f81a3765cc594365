import { describe, expect, it } from 'vitest';
import { BUSY_CPU_MS, HeapTrimmer, TRIM_GROWTH_BYTES } from '../../agent-stub/daemon/heap-trimmer.js';
import { type HeapTrimAddon, trimOnPool } from '../../agent-stub/native/heap-trim.js';

const MB = 1024 * 1024;

/** A process whose RSS and CPU time the test sets; a trim gives back what `freeable` says. */
function fakeProcess(startRss = 60 * MB, afterStart = false) {
  const p = { rss: startRss, cpu: 0, freeable: 0, calls: 0 };
  let release: (() => void) | undefined;
  const gate = { hold: false };
  const trimmer = new HeapTrimmer({
    trim: async () => {
      p.calls++;
      if (gate.hold) await new Promise<void>((r) => (release = r));
      p.rss -= p.freeable;
      const any = p.freeable > 0;
      p.freeable = 0;
      return any;
    },
    log: () => {},
    afterStart,
    rss: () => p.rss,
    cpuMs: () => p.cpu,
  });
  return { p, trimmer, gate, release: () => release?.() };
}

describe('HeapTrimmer', () => {
  it('never trims an idle daemon', async () => {
    const { p, trimmer } = fakeProcess();
    for (let i = 0; i < 100; i++) await trimmer.tick();
    expect(p.calls).toBe(0);
  });

  it('trims once when a busy daemon goes quiet, and not again until it was busy again', async () => {
    const { p, trimmer } = fakeProcess();
    p.cpu += BUSY_CPU_MS * 5;
    p.rss += 40 * MB; // below the growth rule
    await trimmer.tick();
    expect(p.calls).toBe(0); // still busy
    p.freeable = 30 * MB;
    await trimmer.tick(); // quiet now
    expect(p.calls).toBe(1);
    for (let i = 0; i < 10; i++) await trimmer.tick();
    expect(p.calls).toBe(1);
    expect(trimmer.stats()).toEqual({ addon: true, trims: 1, releasedBytes: 30 * MB });
    p.cpu += BUSY_CPU_MS;
    await trimmer.tick();
    await trimmer.tick();
    expect(p.calls).toBe(2);
  });

  it("with afterStart (the relay's process), the first quiet tick trims what the start freed, once", async () => {
    const { p, trimmer } = fakeProcess(60 * MB, true);
    p.freeable = 5 * MB;
    await trimmer.tick();
    expect(p.calls).toBe(1);
    for (let i = 0; i < 10; i++) await trimmer.tick();
    expect(p.calls).toBe(1);
    expect(trimmer.stats().releasedBytes).toBe(5 * MB);
  });

  it('typing (a little CPU each second) is not busy', async () => {
    const { p, trimmer } = fakeProcess();
    for (let i = 0; i < 30; i++) {
      p.cpu += BUSY_CPU_MS / 2;
      await trimmer.tick();
    }
    expect(p.calls).toBe(0);
  });

  it('a daemon that is never quiet trims each time RSS grew by the growth step', async () => {
    const { p, trimmer } = fakeProcess();
    for (let i = 0; i < 20; i++) {
      p.cpu += BUSY_CPU_MS * 10;
      p.rss += TRIM_GROWTH_BYTES / 4;
      await trimmer.tick();
    }
    // 20 ticks grew 5 steps; a trim that gives nothing back raises the floor to what is resident.
    expect(p.calls).toBe(5);
  });

  it('runs one trim at a time, and a trim still running when the process goes quiet is enough', async () => {
    const { p, trimmer, gate, release } = fakeProcess();
    gate.hold = true;
    p.cpu += BUSY_CPU_MS * 10;
    p.rss += TRIM_GROWTH_BYTES;
    const first = trimmer.tick();
    expect(p.calls).toBe(1);
    p.cpu += BUSY_CPU_MS * 10;
    p.rss += TRIM_GROWTH_BYTES;
    expect(trimmer.tick()).toBeUndefined(); // the first has not finished
    expect(p.calls).toBe(1);
    release();
    await first;
    gate.hold = false;
    await trimmer.tick(); // quiet after the busy tick above: one more
    expect(p.calls).toBe(2);
  });

  it('without the addon it reports so and never calls anything', () => {
    const t = new HeapTrimmer({ log: () => {}, rss: () => 1e9, cpuMs: () => 1e6 });
    t.start();
    expect(t.tick()).toBeUndefined();
    t.stop();
    expect(t.stats()).toEqual({ addon: false, trims: 0, releasedBytes: 0 });
  });

  it('an addon that could not queue its work (undefined, not a promise) counts as a trim that gave nothing', async () => {
    const addon = (answer: unknown): HeapTrimAddon => ({
      trim: () => false,
      trimAsync: () => answer as Promise<boolean>,
    });
    await expect(trimOnPool(addon(undefined))()).resolves.toBe(false);
    await expect(trimOnPool(addon(Promise.resolve(true)))()).resolves.toBe(true);
    const { p } = fakeProcess();
    const t = new HeapTrimmer({
      trim: trimOnPool(addon(undefined)),
      log: () => {},
      rss: () => p.rss,
      cpuMs: () => p.cpu,
    });
    p.rss += TRIM_GROWTH_BYTES;
    await t.tick();
    expect(t.stats().trims).toBe(1);
  });
});
