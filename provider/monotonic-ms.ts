/** The clock's reading when this module loaded: readings count from here, as `performance.now()` does. */
const ORIGIN = process.hrtime.bigint();

/**
 * Milliseconds since this module loaded on the monotonic clock (fractions kept), for durations
 * and paces only. It is `performance.now()` without the global `performance`, whose first use
 * loads node's perf_hooks modules for good; the daemon times every PTY read and every link's pace,
 * and with this it never loads them.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() - ORIGIN) / 1e6;
}
