import { statSync } from 'node:fs';
import { PtyRelayError } from '../../provider/errors.js';

/** Bits that let the group or others read, write or enter. */
const GROUP_OTHER_BITS = 0o077;
/** Bits that let the group or others change a file. */
const GROUP_OTHER_WRITE = 0o022;

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/** INSECURE_FILE_MODE naming the file, why it matters and the command that fixes it. */
export function insecureFileError(path: string, mode: number, why: string, fix: string): PtyRelayError {
  return new PtyRelayError('INSECURE_FILE_MODE', `${path} is mode ${octal(mode)} but ${why}; fix: ${fix}`, {
    path,
    mode: octal(mode),
    fix,
  });
}

/**
 * Refuses a file that holds secrets (passwords, passphrases) if the group or others can read it,
 * and one that names commands the relay runs if they can change it.
 */
export function assertSecretFileMode(
  path: string,
  holds: { secrets: boolean; commands: boolean },
  secretName = 'a password or passphrase',
): void {
  if (!holds.secrets && !holds.commands) return;
  const mode = statSync(path).mode;
  if (holds.secrets && (mode & GROUP_OTHER_BITS) !== 0) {
    throw insecureFileError(path, mode, `it holds ${secretName}`, `chmod 600 ${path}`);
  }
  if (holds.commands && (mode & GROUP_OTHER_WRITE) !== 0) {
    throw insecureFileError(path, mode, 'it names commands the relay runs', `chmod go-w ${path}`);
  }
}

/** A warning when a bearer token file can be read by the group or others (it is not changed). */
export function tokenFileWarning(path: string): string | undefined {
  const mode = statSync(path).mode;
  if ((mode & GROUP_OTHER_BITS) === 0) return undefined;
  return `the token file ${path} is mode ${octal(mode)}: others on this machine can read the relay's admin token; fix: chmod 600 ${path}`;
}
