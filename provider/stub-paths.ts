import { homedir } from 'node:os';
import { join } from 'node:path';
import { STUB_PROTOCOL_VERSION } from './wire/messages.js';

/**
 * Where a user's stub daemon lives. Shared by the daemon and the local provider so both agree.
 * `$XDG_RUNTIME_DIR/ptyrelay` when set, else `~/.cache/ptyrelay/run`; the directory is 0700.
 */
export function defaultRuntimeDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PTYRELAY_RUNTIME_DIR) return env.PTYRELAY_RUNTIME_DIR;
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, 'ptyrelay');
  return join(env.HOME || homedir(), '.cache', 'ptyrelay', 'run');
}

/** One daemon per (user, protocol major): the major is part of the socket name. */
export function daemonSocketPath(runtimeDir: string, protocol = STUB_PROTOCOL_VERSION): string {
  return join(runtimeDir, `stub-v${protocol}.sock`);
}

export function daemonLockPath(runtimeDir: string, protocol = STUB_PROTOCOL_VERSION): string {
  return join(runtimeDir, `stub-v${protocol}.lock`);
}

export function daemonLogPath(runtimeDir: string, protocol = STUB_PROTOCOL_VERSION): string {
  return join(runtimeDir, `stub-v${protocol}.log`);
}
