import type { LinkCause } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';

/** `details.cause` values (relay/ssh/connect-cause.ts) by what they say about the outage. */
const CAUSE_OF_DETAIL: Record<string, LinkCause> = {
  refused: 'sshd',
  closed: 'sshd',
  reset: 'sshd',
  timeout: 'network',
  unreachable: 'network',
  dns: 'network',
  auth: 'auth',
};

/** The cause of a failed attempt or a dropped link, for the status a person sees. */
export function linkCauseOf(err: unknown): LinkCause {
  if (!(err instanceof PtyRelayError)) return 'link';
  const detail = err.details?.cause;
  if (typeof detail === 'string' && detail in CAUSE_OF_DETAIL) return CAUSE_OF_DETAIL[detail]!;
  if (err.phase === 'auth') return 'auth';
  if (err.phase === 'hostkey') return 'hostkey';
  if (err.phase === 'deploy' || err.code === 'DAEMON_UNAVAILABLE' || err.code === 'VERSION_MISMATCH')
    return 'daemon';
  if (err.code === 'TIMEOUT') return 'network';
  return 'link';
}
