import { historyDaemonArgs } from '../core/history-config.js';
import type { SshHostConfig } from './host-config.js';

/**
 * Flags of a daemon the relay starts on a host: the host's own history settings first (a daemon
 * takes the first of a repeated flag, so they win over the relay-wide ones in `base`), then
 * `base`, then the host's dirs.
 */
export function hostDaemonArgs(base: readonly string[], cfg: SshHostConfig): string[] {
  const args = [...historyDaemonArgs(cfg.history), ...base];
  if (cfg.runtimeDir) args.push('--runtime-dir', cfg.runtimeDir);
  if (cfg.stateDir) args.push('--state-dir', cfg.stateDir);
  return args;
}
