import { execFile } from 'node:child_process';
import type { ResolvedHost } from './host-config.js';
import { authFailed } from './ssh-auth.js';

/** A password command may wait on a person (a hardware key, an agent unlock), but not forever. */
export const SECRET_COMMAND_TIMEOUT_MS = 30_000;
/** A secret is short; a command printing more than this is not printing a secret. */
const MAX_SECRET_BYTES = 64 * 1024;

/**
 * Runs a `passwordCommand`/`passphraseCommand` (argv, no shell) and returns what it printed, less
 * one trailing newline. Its failure names the program and the exit status only: neither its
 * arguments nor its output are repeated anywhere, since either may hold the secret.
 */
export function runSecretCommand(argv: readonly string[]): Promise<string> {
  const [file, ...args] = argv;
  return new Promise((resolve, reject) => {
    execFile(
      file!,
      args,
      { shell: false, timeout: SECRET_COMMAND_TIMEOUT_MS, maxBuffer: MAX_SECRET_BYTES, encoding: 'utf8' },
      (err, stdout) => {
        if (!err) return resolve(stdout.replace(/\r?\n$/, ''));
        const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: unknown };
        const why =
          typeof e.code === 'number'
            ? `exit ${e.code}`
            : e.killed
              ? `no answer within ${SECRET_COMMAND_TIMEOUT_MS / 1000} s`
              : e.signal
                ? `killed by ${e.signal}`
                : String(e.code ?? 'failed');
        reject(new Error(`${file}: ${why}`));
      },
    );
  });
}

/**
 * The host with `password`/`passphrase` filled in from their commands (run at every connect, so
 * a rotated secret is picked up). A failing command ends the connect with AUTH_FAILED naming it.
 */
export async function withSecretCommands(h: ResolvedHost): Promise<ResolvedHost> {
  const out = { ...h };
  const where = `${h.user}@${h.hostName}:${h.port}`;
  for (const [key, field] of [
    ['passwordCommand', 'password'],
    ['passphraseCommand', 'passphrase'],
  ] as const) {
    const argv = h[key];
    if (!argv) continue;
    try {
      out[field] = await runSecretCommand(argv);
    } catch (err) {
      const method = field === 'password' ? 'password' : 'publickey';
      throw authFailed(where, [{ method, result: `${key} failed: ${(err as Error).message}` }]);
    }
  }
  return out;
}
