import { PtyRelayError } from '../../provider/errors.js';
import type { Command } from './command.js';

/**
 * One-shot commands give up after this long by default: a host whose first contact hangs fails
 * within its connect timeout (10 s) anyway; this bounds everything else (a send that waits for an
 * outage to end, a relay that does not answer).
 */
export const DEFAULT_ONE_SHOT_TIMEOUT_S = 30;

/** `--timeout SECONDS` as milliseconds; INVALID_ARGUMENT (exit 2) unless a positive number. */
export function parseTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_ONE_SHOT_TIMEOUT_S * 1000;
  const s = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN;
  if (!(s > 0))
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `--timeout takes a number of seconds > 0, got ${String(value)}`,
    );
  return Math.round(s * 1000);
}

/**
 * Adds `--timeout SECONDS` (default 30) to a one-shot command: past it the command fails with
 * TIMEOUT naming what it was doing, and exits 1.
 */
export function withTimeout(name: string, cmd: Command): Command {
  return {
    ...cmd,
    options: { ...cmd.options, timeout: { type: 'string' } },
    help: `${cmd.help ? `${cmd.help.trimEnd()}\n` : ''}  --timeout S  give up after S seconds (default ${DEFAULT_ONE_SHOT_TIMEOUT_S})\n`,
    async run(args) {
      return withDeadline(name, parseTimeout(args.values.timeout), cmd.run(args));
    },
  };
}

/** `work`, or TIMEOUT naming `name` once `ms` have passed (the `--timeout` of one step). */
export async function withDeadline<T>(name: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new PtyRelayError('TIMEOUT', `${name} did not finish within ${ms / 1000} s (--timeout)`, {
            timeoutMs: ms,
          }),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** {@link withTimeout} for every command of a table. */
export function withTimeouts(cmds: Record<string, Command>): Record<string, Command> {
  return Object.fromEntries(Object.entries(cmds).map(([n, c]) => [n, withTimeout(n, c)]));
}
