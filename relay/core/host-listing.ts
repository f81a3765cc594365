/**
 * Listings across hosts that one host down never blocks: each host is asked at once, a host whose
 * link is down (retrying, deploy failed) is not asked at all, and whatever has not answered by the
 * deadline is left out and named with its state and cause (HostUnavailable). The answers of slow
 * hosts still arrive later for whoever wants them (`late`), e.g. to publish their terminals.
 */
import type { HostUnavailable } from '../../provider/client/relay-protocol.js';
import type { LinkState } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';

/**
 * A listing stops waiting for hosts after this long, so it answers within 2 s (the bench's
 * `listing` scenario) with what the hosts that answered hold.
 */
export const LISTING_DEADLINE_MS = 1800;

/** The command that records a host's key. */
export const trustCommand = (host: string): string => `ptyrelay hosts trust ${host}`;

/** Why a host whose link is in `state` cannot answer now, or undefined when it may. */
export function unavailableByState(
  host: string,
  state: LinkState,
  now = Date.now(),
): HostUnavailable | undefined {
  switch (state.state) {
    case 'reconnecting': {
      const cause = state.cause === 'hostkey' ? 'untrusted' : 'unreachable';
      return {
        host,
        status: cause,
        reason: `${state.lastError ?? 'link down'} (attempt ${state.attempt}, next in ${Math.ceil(state.nextInMs / 1000)} s)`,
        ...(state.cause ? { cause: state.cause } : {}),
        nextAttemptAt: now + state.nextInMs,
        ...(cause === 'untrusted' ? { fix: trustCommand(host) } : {}),
      };
    }
    case 'lost':
      return {
        host,
        status: state.cause === 'hostkey' ? 'untrusted' : 'unreachable',
        reason: state.reason,
        ...(state.cause ? { cause: state.cause } : {}),
        ...(state.cause === 'hostkey' ? { fix: trustCommand(host) } : {}),
      };
    case 'deploy-failed':
      if (state.nextAttemptAt <= now) return undefined;
      return {
        host,
        status: 'deploy-failed',
        code: state.code,
        reason: `${state.reason} (next attempt in ${Math.ceil((state.nextAttemptAt - now) / 1000)} s)`,
        cause: 'daemon',
        nextAttemptAt: state.nextAttemptAt,
      };
    default:
      return undefined;
  }
}

/** Why asking `host` failed with `err`, in the words of a listing. */
export function unavailableByError(host: string, err: unknown): HostUnavailable {
  const message = err instanceof Error ? err.message : String(err);
  if (!(err instanceof PtyRelayError)) return { host, status: 'error', reason: message };
  const d = err.details ?? {};
  if (err.code === 'HOSTKEY_UNKNOWN' || err.code === 'HOSTKEY_MISMATCH' || err.code === 'HOSTKEY_REVOKED') {
    const fingerprint = typeof d.presented === 'string' ? d.presented : undefined;
    return {
      host,
      status: 'untrusted',
      code: err.code,
      reason: message,
      cause: 'hostkey',
      ...(fingerprint ? { fingerprint } : {}),
      fix: `${trustCommand(host)}${err.code === 'HOSTKEY_MISMATCH' ? ' --replace' : ''}`,
    };
  }
  const unreachable = ['CONNECT_FAILED', 'LINK_CLOSED', 'TIMEOUT', 'AUTH_FAILED'].includes(err.code);
  const deploy = err.code.startsWith('DEPLOY') || err.code === 'DAEMON_START_FAILED';
  return {
    host,
    status: deploy ? 'deploy-failed' : unreachable ? 'unreachable' : 'error',
    code: err.code,
    reason: message,
  };
}

export interface HostsAnswer<T> {
  /** The rows of every host that answered in time, in host order. */
  rows: T[];
  /** The hosts left out, in host order. */
  unavailable: HostUnavailable[];
}

/**
 * Asks every host of `hosts` through `ask` at once and answers by `deadlineMs`: hosts whose link
 * state says they cannot answer are not asked; a host that failed or has not answered is named.
 * `late` gets the rows of a host that answered after the deadline.
 */
export async function askHosts<T>(
  hosts: string[],
  opts: {
    ask: (host: string) => Promise<T[]>;
    stateOf: (host: string) => LinkState;
    /** What is already known to leave a host out (it is not asked). */
    known?: (host: string) => HostUnavailable | undefined;
    deadlineMs?: number;
    late?: (host: string, rows: T[]) => void;
  },
): Promise<HostsAnswer<T>> {
  const deadlineMs = opts.deadlineMs ?? LISTING_DEADLINE_MS;
  type Slot = { rows: T[] } | { unavailable: HostUnavailable } | undefined;
  const slots: Slot[] = hosts.map(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  let expired = false;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      expired = true;
      resolve();
    }, deadlineMs);
  });
  const asks = hosts.map(async (host, i) => {
    const down = opts.known?.(host) ?? unavailableByState(host, opts.stateOf(host));
    if (down) {
      slots[i] = { unavailable: down };
      return;
    }
    try {
      const rows = await opts.ask(host);
      if (expired) opts.late?.(host, rows);
      else slots[i] = { rows };
    } catch (err) {
      if (!expired) slots[i] = { unavailable: unavailableByError(host, err) };
    }
  });
  await Promise.race([Promise.all(asks), deadline]);
  clearTimeout(timer);
  expired = true;
  const rows: T[] = [];
  const unavailable: HostUnavailable[] = [];
  hosts.forEach((host, i) => {
    const s = slots[i];
    if (s === undefined) unavailable.push(silent(host, opts.stateOf(host), deadlineMs));
    else if ('rows' in s) rows.push(...s.rows);
    else unavailable.push(s.unavailable);
  });
  return { rows, unavailable };
}

/** A host that has not answered by the deadline: what its link is doing. */
function silent(host: string, state: LinkState, deadlineMs: number): HostUnavailable {
  const down = unavailableByState(host, state);
  if (down) return down;
  const connecting = state.state === 'connecting' || state.state === 'idle';
  return {
    host,
    status: 'connecting',
    reason: connecting
      ? `still connecting after ${deadlineMs / 1000} s`
      : `connected but did not answer within ${deadlineMs / 1000} s`,
  };
}
