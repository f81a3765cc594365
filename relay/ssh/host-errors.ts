import { PtyRelayError } from '../../provider/errors.js';
import { causeOfErrno, describeCause } from './connect-cause.js';

/** LINK_CLOSED for an SSH connection that failed (`err`) or that the host closed. */
export function sshLost(host: string, err?: Error): PtyRelayError {
  if (!err)
    return new PtyRelayError('LINK_CLOSED', `SSH connection to ${host} closed by the host`, {
      cause: 'closed',
    });
  const cause = causeOfErrno(err) ?? 'reset';
  return new PtyRelayError(
    'LINK_CLOSED',
    `SSH connection to ${host} lost: ${describeCause(cause)} (${err.message})`,
    {
      cause,
    },
  );
}

/** Host key errors name the command that fixes them (the relay's host name, not the address). */
export function withHostHint(host: string, err: unknown): unknown {
  if (!(err instanceof PtyRelayError)) return err;
  const details = { ...err.details, host };
  if (err.code === 'HOSTKEY_UNKNOWN')
    return new PtyRelayError(
      err.code,
      `${host}: ${err.message}; to trust it: ptyrelay hosts trust ${host}`,
      details,
    );
  if (err.code === 'HOSTKEY_MISMATCH')
    return new PtyRelayError(
      err.code,
      `${host}: ${err.message}; if the host was reinstalled: ptyrelay hosts trust ${host} --replace`,
      details,
    );
  return new PtyRelayError(err.code, `${host}: ${err.message}`, details);
}
