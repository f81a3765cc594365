import { PtyRelayError } from './errors.js';

/**
 * Tuning of agent sends in the stub (see docs/agents.md). Defaults, with why:
 * - pollIntervalMs 50: /proc is read this often while a send waits; a poll costs a few file reads.
 * - promptGraceMs 150: after our prompt marker the output must stay quiet this long before the
 *   prompt counts (a child that inherited PROMPT_COMMAND can print the marker too).
 * - inferredIdleMs 5000: silence after which a send gives up with `inferred_idle`; long enough that
 *   a quiet build step or a 2 s pause is not mistaken for idle, short enough to report back.
 * - maxReadBytes 256 KiB: bound of a send's output and of each read.
 */
export interface ReadinessConfig {
  pollIntervalMs: number;
  promptGraceMs: number;
  inferredIdleMs: number;
  maxReadBytes: number;
}

export const DEFAULT_READINESS: ReadinessConfig = {
  pollIntervalMs: 50,
  promptGraceMs: 150,
  inferredIdleMs: 5000,
  maxReadBytes: 256 * 1024,
};

/** Lower bounds that keep the probe cheap and the bound useful. */
const MIN_POLL_INTERVAL_MS = 10;
const MIN_READ_BYTES = 4 * 1024;

/**
 * Fills defaults and checks the relations at load, with a message naming the field:
 * promptGraceMs ≥ pollIntervalMs (at least one readiness poll runs inside the grace window),
 * maxReadBytes ≤ retainedBytes (a read cannot promise more than the session keeps).
 */
export function resolveReadinessConfig(
  given: Partial<ReadinessConfig>,
  retainedBytes: number,
  prefix = '',
): ReadinessConfig {
  const c: ReadinessConfig = { ...DEFAULT_READINESS };
  // Not wire data: `given` is the typed Partial<ReadinessConfig> of the caller.
  for (const [k, v] of Object.entries(given))
    if (v !== undefined) (c as unknown as Record<string, number>)[k] = v;
  const fail = (field: keyof ReadinessConfig, why: string): never => {
    throw new PtyRelayError('CONFIG_INVALID', `${prefix}${field} ${why}`, { field: `${prefix}${field}` });
  };
  for (const k of Object.keys(DEFAULT_READINESS) as (keyof ReadinessConfig)[]) {
    if (!Number.isInteger(c[k]) || c[k] <= 0) fail(k, `must be a positive integer, got ${c[k]}`);
  }
  if (c.pollIntervalMs < MIN_POLL_INTERVAL_MS)
    fail('pollIntervalMs', `must be at least ${MIN_POLL_INTERVAL_MS}, got ${c.pollIntervalMs}`);
  if (c.promptGraceMs < c.pollIntervalMs)
    fail(
      'promptGraceMs',
      `(${c.promptGraceMs}) must be at least pollIntervalMs (${c.pollIntervalMs}): a readiness poll has to run inside the grace window`,
    );
  if (c.inferredIdleMs < c.promptGraceMs)
    fail('inferredIdleMs', `(${c.inferredIdleMs}) must be at least promptGraceMs (${c.promptGraceMs})`);
  if (c.maxReadBytes < MIN_READ_BYTES)
    fail('maxReadBytes', `must be at least ${MIN_READ_BYTES}, got ${c.maxReadBytes}`);
  if (c.maxReadBytes > retainedBytes)
    fail('maxReadBytes', `(${c.maxReadBytes}) must not exceed the retained bytes (${retainedBytes})`);
  return c;
}
