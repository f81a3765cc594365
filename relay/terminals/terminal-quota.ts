import { PtyRelayError } from '../../provider/errors.js';
import { claimHolder, type TerminalRegistry } from './terminal-registry.js';

/** The terminal counts a relay allows (docs/config.md, `limits`). */
export interface TerminalQuota {
  /** Terminals the relay publishes at most, all hosts together. */
  maxTerminals: number;
  /** Terminals on one host. */
  maxTerminalsPerHost: number;
  /** Terminals one client (a claim holder: `client:<id>` or `session:<id>`) holds. */
  maxTerminalsPerClient: number;
}

/**
 * Throws LIMIT_EXCEEDED when one more terminal on `host` for `holder` would cross a bound. Only
 * running terminals count: an exited one (kept a while so its exit code can be read) holds nothing.
 */
export function checkTerminalQuota(
  registry: TerminalRegistry,
  q: TerminalQuota,
  host: string,
  holder: string | undefined,
): void {
  const live = registry.list().filter((r) => r.exitCode === undefined);
  const over = (limit: keyof TerminalQuota, n: number, what: string) => {
    if (n >= q[limit])
      throw new PtyRelayError(
        'LIMIT_EXCEEDED',
        `${what} has ${n} terminals (limits.${limit} = ${q[limit]})`,
        {
          limit,
          max: q[limit],
        },
      );
  };
  over('maxTerminals', live.length, 'the relay');
  over('maxTerminalsPerHost', live.filter((r) => r.host === host).length, `host ${host}`);
  if (holder !== undefined)
    over('maxTerminalsPerClient', live.filter((r) => claimHolder(r.claim) === holder).length, holder);
}

/** Throws LIMIT_EXCEEDED for one input write larger than `max` bytes (`limits.maxInputBytes`). */
export function checkInputSize(bytes: number, max: number): void {
  if (bytes > max)
    throw new PtyRelayError(
      'LIMIT_EXCEEDED',
      `an input write of ${bytes} bytes is larger than limits.maxInputBytes (${max})`,
      { limit: 'maxInputBytes', max },
    );
}
