import { PtyRelayError } from '../../provider/errors.js';

/**
 * Why a connection to a host failed, as `details.cause` of CONNECT_FAILED / TIMEOUT / AUTH_FAILED
 * (docs/errors.md). The codes keep their meaning; the cause says what happened.
 */
export type ConnectCause = 'refused' | 'timeout' | 'dns' | 'unreachable' | 'reset' | 'closed' | 'auth';

/** errno codes of a failed TCP connect or name lookup, by cause. */
const CAUSE_OF_ERRNO: Record<string, ConnectCause> = {
  ECONNREFUSED: 'refused',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_FAIL: 'dns',
  EAI_NONAME: 'dns',
  EAI_NODATA: 'dns',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EHOSTDOWN: 'unreachable',
  ENETDOWN: 'unreachable',
  ETIMEDOUT: 'timeout',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
};

/** What each cause means to a person (the CLI's status line and error messages). */
const CAUSE_TEXT: Record<ConnectCause, string> = {
  refused: 'connection refused (sshd not running or wrong port)',
  timeout: 'timed out (network down, host off, or packets dropped)',
  dns: 'host name does not resolve',
  unreachable: 'host unreachable (network)',
  reset: 'connection reset',
  closed: 'connection closed by the host',
  auth: 'authentication failed',
};

export function describeCause(cause: ConnectCause): string {
  return CAUSE_TEXT[cause];
}

/** The cause of an errno-carrying error, if it is one of the known ones. */
export function causeOfErrno(err: unknown): ConnectCause | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code ? CAUSE_OF_ERRNO[code] : undefined;
}

/** The typed error of a failed TCP connect (or name lookup) to `where`. */
export function socketError(err: NodeJS.ErrnoException, where: string): PtyRelayError {
  const cause = causeOfErrno(err) ?? 'unreachable';
  const code = cause === 'timeout' ? 'TIMEOUT' : 'CONNECT_FAILED';
  return new PtyRelayError(
    code,
    `cannot connect to ${where}: ${describeCause(cause)} (${err.code ?? err.message})`,
    {
      cause,
      ...(err.code ? { errno: err.code } : {}),
    },
  );
}

/** The typed error of a connect that did not finish within `ms`. */
export function timeoutError(what: string, where: string, ms: number): PtyRelayError {
  return new PtyRelayError(
    'TIMEOUT',
    `${what} to ${where} timed out after ${ms} ms: ${describeCause('timeout')}`,
    {
      cause: 'timeout',
      timeoutMs: ms,
    },
  );
}

/** `details.cause` of a PtyRelayError, when it is a connect cause. */
export function connectCauseOf(err: unknown): ConnectCause | undefined {
  const c = err instanceof PtyRelayError ? err.details?.cause : undefined;
  return typeof c === 'string' && c in CAUSE_TEXT ? (c as ConnectCause) : undefined;
}
