import { memoryUsage } from 'node:process';
import { monotonicMs } from '../../provider/monotonic-ms.js';

/** How often the trimmer looks at the daemon's CPU time and RSS. */
export const TRIM_TICK_MS = 1000;
/**
 * RSS growth since the last trim after which a daemon that never goes quiet (a session running
 * `yes` for days) trims anyway. Large on purpose: under load a trim competes with the allocating
 * threads for malloc's locks for tens of milliseconds.
 */
export const TRIM_GROWTH_BYTES = 64 * 1024 * 1024;
/** CPU time within one tick (both threads) that counts as busy: output or input was moving. */
export const BUSY_CPU_MS = 20;
/** A trim that gave back at least this much is logged (unless the options say otherwise). */
const LOG_RELEASED_BYTES = 4 * 1024 * 1024;

export interface HeapTrimStats {
  /** The addon loaded: trims happen. */
  addon: boolean;
  trims: number;
  /** RSS the trims gave back, in total (measured around each call). */
  releasedBytes: number;
}

export interface HeapTrimmerOptions {
  /** The addon's pool-thread trim; undefined when the addon is not there (the trimmer then only says so). */
  trim?: () => Promise<boolean>;
  log: (msg: string, extra?: Record<string, unknown>) => void;
  /** Trims that gave back at least this much are logged; default {@link LOG_RELEASED_BYTES}. */
  logReleasedBytes?: number;
  /** The process's start counts as a busy spell: the first quiet tick trims what it freed. */
  afterStart?: boolean;
  /** Clocks of the process, replaceable for a unit test. */
  rss?: () => number;
  cpuMs?: () => number;
  tickMs?: number;
}

/**
 * Decides when the daemon trims its heaps (agent-stub/native/heap-trim.ts): once the process goes
 * quiet after having been busy, so what a burst of output freed goes back; and, for a daemon that
 * is never quiet, each time RSS grew by TRIM_GROWTH_BYTES since the last trim. An idle daemon never
 * trims, and typing one key at a time (a few milliseconds of CPU a second) does not count as busy;
 * keys 2 ms apart (14–47 ms a second) can, and a daemon that crosses the line back and forth trims
 * every ~2 s, 0.1–0.6 ms on the pool each. The trim runs on libuv's pool, one at a time. The
 * relay's process trims by the same rules (relay/core/heap-trim.ts).
 */
export class HeapTrimmer {
  private readonly rss: () => number;
  private readonly cpuMs: () => number;
  private floor: number;
  private lastCpu: number;
  private busySinceTrim = false;
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly counts = { trims: 0, releasedBytes: 0 };

  constructor(private readonly opts: HeapTrimmerOptions) {
    this.rss = opts.rss ?? (() => memoryUsage.rss());
    this.cpuMs =
      opts.cpuMs ??
      (() => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1000;
      });
    this.floor = this.rss();
    this.lastCpu = this.cpuMs();
    this.busySinceTrim = opts.afterStart === true;
  }

  start(): this {
    if (this.opts.trim && !this.timer) {
      this.timer = setInterval(() => this.tick(), this.opts.tickMs ?? TRIM_TICK_MS);
      this.timer.unref();
    }
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  stats(): HeapTrimStats {
    return { addon: this.opts.trim !== undefined, ...this.counts };
  }

  /** One look: starts a trim when the rules above say so (its promise, for the unit test). */
  tick(): Promise<void> | undefined {
    const cpu = this.cpuMs();
    const busy = cpu - this.lastCpu >= BUSY_CPU_MS;
    this.lastCpu = cpu;
    if (busy) this.busySinceTrim = true;
    if (this.running) return undefined;
    const rss = this.rss();
    if (rss >= this.floor + TRIM_GROWTH_BYTES) return this.trimNow(rss, 'growth');
    if (!busy && this.busySinceTrim) return this.trimNow(rss, 'quiet');
    return undefined;
  }

  private trimNow(before: number, why: 'growth' | 'quiet'): Promise<void> | undefined {
    const trim = this.opts.trim;
    if (!trim) return undefined;
    this.busySinceTrim = false;
    const t0 = monotonicMs();
    const done = trim().then(
      () => {
        const after = this.rss();
        const released = Math.max(0, before - after);
        this.counts.trims++;
        this.counts.releasedBytes += released;
        this.floor = after;
        if (released >= (this.opts.logReleasedBytes ?? LOG_RELEASED_BYTES))
          this.opts.log('heap trimmed', {
            why,
            rssBefore: before,
            rssAfter: after,
            ms: Math.round((monotonicMs() - t0) * 10) / 10,
          });
      },
      (err: Error) => this.opts.log('heap trim failed', { error: err.message }),
    );
    this.running = done.finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}
