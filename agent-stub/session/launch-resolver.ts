import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { PtyRelayError } from '../../provider/errors.js';
import type { StubSpawnParams } from '../../provider/wire/messages.js';
import { defaultShell, prepareShellLaunch } from '../shell/shell-integration.js';
import type { SessionLaunch } from './session-launch.js';

/** Variables of the daemon's own that must not leak into terminals. */
const PRIVATE_ENV_PREFIX = 'PTYRELAY_';
const INTEGRATED_SHELLS = new Set(['bash', 'zsh']);

function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function findInPath(cmd: string, pathVar: string | undefined): string | undefined {
  if (cmd.includes('/')) return isExecutable(cmd) ? cmd : undefined;
  for (const dir of (pathVar ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (dir && isExecutable(join(dir, cmd))) return join(dir, cmd);
  }
  return undefined;
}

function buildEnv(p: StubSpawnParams, base: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined && !k.startsWith(PRIVATE_ENV_PREFIX)) env[k] = v;
  }
  env.TERM = 'xterm-256color';
  env.COLORTERM = 'truecolor';
  Object.assign(env, p.env ?? {});
  for (const k of p.envToDelete ?? []) delete env[k];
  return env;
}

/**
 * Turns spawn parameters into what node-pty needs: validated cwd and command, the environment,
 * and shell integration for bash/zsh (the default shell is the user's login shell).
 */
export function resolveLaunch(p: StubSpawnParams, scriptDir: string, base = process.env): SessionLaunch {
  const env = buildEnv(p, base);
  const home = env.HOME ?? homedir();
  const cwd = p.cwd === '~' ? home : p.cwd?.startsWith('~/') ? join(home, p.cwd.slice(2)) : (p.cwd ?? home);
  let cwdOk = false;
  try {
    cwdOk = statSync(cwd).isDirectory();
  } catch {
    cwdOk = false;
  }
  if (!cwdOk)
    throw new PtyRelayError('SPAWN_FAILED', `cwd ${cwd} does not exist or is not a directory`, { cwd });
  const nonce = randomBytes(12).toString('hex');
  const common = { cwd, cols: p.cols, rows: p.rows, name: p.name, nonce };

  let shell: string | undefined;
  let login = false;
  if (p.command === undefined) {
    shell = defaultShell(env);
    login = true;
  } else if (INTEGRATED_SHELLS.has(basename(p.command)) && (p.args ?? []).length === 0) {
    shell = p.command;
  }
  const file = findInPath(shell ?? p.command!, env.PATH);
  if (!file) {
    throw new PtyRelayError('SPAWN_FAILED', `command ${shell ?? p.command} not found or not executable`, {
      command: shell ?? p.command,
    });
  }
  if (shell) {
    const l = prepareShellLaunch({ shell: file, login, nonce, scriptDir, userEnv: env });
    return {
      ...common,
      file: l.file,
      args: l.args,
      env: { ...env, ...l.env },
      supportsCommandDetection: l.supportsCommandDetection,
    };
  }
  return { ...common, file, args: p.args ?? [], env, supportsCommandDetection: false };
}
