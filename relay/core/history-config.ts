import * as z from 'zod/mini';
import { type HistoryLimits, resolveHistoryLimits } from '../../agent-stub/history/history-limits.js';
import { bool, type ConfigProblem, describe, integer, settings } from './config-validate.js';

/**
 * The output history settings of daemons this relay starts (docs/config.md, `history`): what is
 * set here; the daemon fills in its defaults for the rest.
 */
export type HistoryConfig = Partial<HistoryLimits>;

/** Config field → the daemon flag that carries it. */
const FLAGS = {
  segmentBytes: '--history-segment-bytes',
  sessionBytes: '--history-session-bytes',
  hostBytes: '--history-host-bytes',
  freePercent: '--history-free-percent',
  tailBytes: '--tail-bytes',
} as const;

const percentError = (iss: { input?: unknown }) => `must be a number in (0, 100], got ${describe(iss.input)}`;
const size = () => z.optional(integer(1, Number.MAX_SAFE_INTEGER));

/**
 * A `history` object (at the top, and in each host): each value's type. How the values relate
 * (the daemon's own rules, and the ring the tail must fit in) is {@link historyProblem}'s.
 */
export const historyConfigSchema = settings({
  enabled: z.optional(bool()),
  segmentBytes: size(),
  sessionBytes: size(),
  hostBytes: size(),
  freePercent: z.optional(
    z
      .number({ error: percentError })
      .check(z.gt(0, { error: percentError }), z.lte(100, { error: percentError })),
  ),
  tailBytes: size(),
}) satisfies z.ZodMiniType<HistoryConfig>;

/**
 * What breaks the daemon's rules (resolveHistoryLimits) in the history at `path` (`['history']`,
 * `['hosts', 'build1', 'history']`), or a tail larger than `ringBytes`: the key and the message,
 * its daemon flags renamed to the keys (`history.sessionBytes 4194304 must be at least twice
 * history.segmentBytes 4194304`); undefined when the history is fine.
 */
export function historyProblem(
  h: HistoryConfig,
  path: string[],
  ringBytes: number,
): ConfigProblem | undefined {
  const field = path.join('.');
  try {
    resolveHistoryLimits(h);
  } catch (err) {
    // The daemon's message starts with the flag at fault: that key is the issue's.
    const message = (err as Error).message;
    const [flag = '', ...rest] = message.split(' ');
    const key = Object.keys(FLAGS).find((k) => FLAGS[k as keyof typeof FLAGS] === flag);
    let m = key ? rest.join(' ') : message;
    for (const [k, f] of Object.entries(FLAGS)) m = m.replaceAll(f, `${field}.${k}`);
    return { path: key ? [...path, key] : path, message: m };
  }
  if (h.tailBytes !== undefined && h.tailBytes > ringBytes)
    return {
      path: [...path, 'tailBytes'],
      message: `(${h.tailBytes}) must not exceed limits.ringBytes (${ringBytes})`,
    };
  return undefined;
}

/** Daemon flags for the settings given (a daemon takes the first of a repeated flag). */
export function historyDaemonArgs(h: HistoryConfig | undefined): string[] {
  if (!h) return [];
  const args: string[] = [];
  if (h.enabled !== undefined) args.push('--history', h.enabled ? 'on' : 'off');
  for (const [k, flag] of Object.entries(FLAGS) as [keyof typeof FLAGS, string][]) {
    const v = h[k];
    if (v !== undefined) args.push(flag, String(v));
  }
  return args;
}
