/**
 * V8 flag of both long-running processes, the relay and the daemon: functions are optimized after
 * an eighth of the calls V8 waits for by default (`--interrupt-budget`, 66 KiB of bytecode per
 * tick by default).
 *
 * V8 optimizes a function once it ran a few times its budget. The code one keystroke runs through
 * (a frame decoded, the PTY written, the echo read, a frame encoded and written; on the relay the
 * input queue and ssh2's channel) runs once per key: at typing speed it stayed in V8's baseline
 * tier for thousands of keystrokes (`--trace-opt` of a daemon after 600 keys at 30 ms: none of
 * it optimized), and every hop of every echo paid for that. With this budget it is optimized within
 * the first few hundred keys. Measured on two daemons side by side, keys 30 ms apart: echo p50
 * 1.16–1.20 ms against 1.40–1.42 ms with V8's budget, from the 400th key on (docs/benchmarks.md).
 * Its cost to a flood is within the runs' noise (flood-only runs with and without it: batching A/B
 * 0.85–0.99 against 0.87–1.02; it makes a daemon compile about twice as many functions during its
 * first floods). What had looked like its cost was the model feeder's fresh slabs
 * (docs/benchmarks.md, "Issue 17, third round").
 */
export const INTERACTIVE_TIER_UP_FLAG = '--interrupt-budget=8192';
