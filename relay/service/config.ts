import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { configError, parseSettings } from '../core/config-validate.js';
import { assertSecretFileMode } from '../core/file-modes.js';
import { type RelayConfig, relayConfigSchema } from './config-schema.js';

export { HOST_KEYS, type SshHostConfig } from '../ssh/host-config.js';
export {
  DEFAULT_FLOW_CONTROL,
  DEFAULT_INPUT,
  DEFAULT_LIMITS,
  DEFAULT_LISTEN,
  type FlowControlConfig,
  type InputConfig,
  LOCAL_HOST,
  type RelayConfig,
  type RelayLimits,
} from './config-schema.js';

/** Validates a parsed config object and fills in defaults; CONFIG_INVALID names the bad field. */
export function validateConfig(raw: unknown): RelayConfig {
  return parseSettings(relayConfigSchema, raw ?? {});
}

/** `$PTYRELAY_CONFIG`, else `~/.config/ptyrelay/config.json`. */
export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.PTYRELAY_CONFIG || join(env.HOME || homedir(), '.config', 'ptyrelay', 'config.json');
}

/**
 * Validates the text of the config file `file` without touching the file system: JSON, then the
 * schema, then relative key paths made relative to `file`'s dir. Refusals are loadConfig's own
 * (CONFIG_INVALID, prefixed with `file`), so a running relay can re-validate an edited file and
 * refuse it with the same typed error. The file's mode (INSECURE_FILE_MODE) is loadConfig's to
 * check: call that to have the file read and its mode checked too.
 */
export function parseConfigText(text: string, file: string): RelayConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw configError(`config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  let config: RelayConfig;
  try {
    config = validateConfig(raw);
  } catch (err) {
    throw configError(`${file}: ${(err as Error).message}`);
  }
  return withPathsRelativeTo(config, dirname(resolve(file)));
}

/**
 * Reads and validates the JSON config. Without `path`, a missing default file means "all
 * defaults"; an explicitly named file must exist. A file with a password or passphrase that the
 * group or others can read, or with a password command they can change, is refused
 * (INSECURE_FILE_MODE).
 */
export function loadConfig(path?: string): RelayConfig {
  const file = path ?? defaultConfigPath();
  if (!existsSync(file)) {
    if (path === undefined) return validateConfig({});
    throw configError(`config file ${file} does not exist`);
  }
  const config = parseConfigText(readFileSync(file, 'utf8'), file);
  const hosts = Object.values(config.hosts);
  assertSecretFileMode(file, {
    secrets: hosts.some((h) => h.password !== undefined || h.passphrase !== undefined),
    commands: hosts.some((h) => h.passwordCommand !== undefined || h.passphraseCommand !== undefined),
  });
  return config;
}

/** Host key and identity files given as relative paths are relative to the config file's directory. */
function withPathsRelativeTo(config: RelayConfig, dir: string): RelayConfig {
  const fix = (p: string | undefined) =>
    p === undefined || isAbsolute(p) || p.startsWith('~') ? p : join(dir, p);
  for (const h of Object.values(config.hosts)) {
    if (h.identityFile !== undefined) h.identityFile = fix(h.identityFile);
    if (h.knownHostsFile !== undefined) h.knownHostsFile = fix(h.knownHostsFile);
  }
  return config;
}
