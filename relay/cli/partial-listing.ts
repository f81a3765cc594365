import type { HostUnavailable } from '../../provider/client/relay-protocol.js';

/** Exit status of a listing that left hosts out (docs/cli.md): the rows printed are incomplete. */
export const PARTIAL_EXIT = 3;

/** One line for people: `box: unreachable: connect ECONNREFUSED … (attempt 3, next in 8 s)`. */
export function describeUnavailable(u: HostUnavailable): string {
  const fix = u.fix ? ` (run: ${u.fix})` : '';
  const fp = u.fingerprint ? ` [${u.fingerprint}]` : '';
  return `${u.host}: ${u.status}: ${u.reason}${fp}${fix}`;
}

/**
 * Names on stderr the hosts a listing left out (never on stdout, which carries the rows) and
 * returns the command's exit status: 0 when complete, PARTIAL_EXIT otherwise.
 */
export function reportUnavailable(unavailable: HostUnavailable[], json: boolean): number {
  if (unavailable.length === 0) return 0;
  if (!json)
    for (const u of unavailable) process.stderr.write(`ptyrelay: left out ${describeUnavailable(u)}\n`);
  return PARTIAL_EXIT;
}
