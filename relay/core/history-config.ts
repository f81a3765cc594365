import { type HistoryLimits, resolveHistoryLimits } from '../../agent-stub/history/history-limits.js';
import { configError, describe, integer, type Obj, object, onlyKeys, optBoolean } from './config-validate.js';

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
const KEYS = ['enabled', ...Object.keys(FLAGS)];

/**
 * Validates a `history` object at `field` (`history`, `hosts.build1.history`) by the daemon's own
 * rules, with messages naming the fields. `ringBytes`: the ring the tail must fit in.
 */
export function validateHistoryConfig(
  raw: unknown,
  field: string,
  ringBytes: number,
): HistoryConfig | undefined {
  if (raw === undefined) return undefined;
  const o: Obj = object(raw, field);
  onlyKeys(o, KEYS, field);
  const out: HistoryConfig = {};
  const enabled = optBoolean(o, 'enabled', field);
  if (enabled !== undefined) out.enabled = enabled;
  for (const k of ['segmentBytes', 'sessionBytes', 'hostBytes', 'tailBytes'] as const) {
    const v = integer(o, k, field, 1, Number.MAX_SAFE_INTEGER);
    if (v !== undefined) out[k] = v;
  }
  const pct = o.freePercent;
  if (pct !== undefined) {
    if (typeof pct !== 'number' || !(pct > 0 && pct <= 100))
      throw configError(`${field}.freePercent must be a number in (0, 100], got ${describe(pct)}`);
    out.freePercent = pct;
  }
  try {
    resolveHistoryLimits(out);
  } catch (err) {
    let m = (err as Error).message;
    for (const [k, flag] of Object.entries(FLAGS)) m = m.replaceAll(flag, `${field}.${k}`);
    throw configError(m);
  }
  if (out.tailBytes !== undefined && out.tailBytes > ringBytes)
    throw configError(
      `${field}.tailBytes (${out.tailBytes}) must not exceed limits.ringBytes (${ringBytes})`,
    );
  return out;
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
