import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { basename, join } from 'node:path';
import { BASH_SCRIPT } from './bash-script.js';
import { ZPROFILE_SCRIPT, ZSHENV_SCRIPT, ZSHRC_SCRIPT } from './zsh-scripts.js';

/** How to spawn a shell so that it emits OSC 633 prompt and command markers. */
export interface ShellLaunch {
  /** Executable to spawn. */
  file: string;
  args: string[];
  /** Variables to add to the spawn environment. */
  env: Record<string, string>;
  /** Whether the shell will report command start/end (E, C, D markers). */
  supportsCommandDetection: boolean;
  shellKind: 'bash' | 'zsh' | 'other';
}

/** Input of {@link prepareShellLaunch}. */
export interface ShellLaunchOptions {
  /** Path of the user's shell, e.g. `/bin/bash`, `/usr/bin/zsh`, `/bin/sh`. */
  shell: string;
  /** Behave as a login shell (load profile files). */
  login: boolean;
  /** Session nonce, carried by every OSC 633;E marker. */
  nonce: string;
  /** Private (0700) directory for the integration scripts; created if missing. */
  scriptDir: string;
  /** Environment the shell will get; HOME and ZDOTDIR are read from it. */
  userEnv: Record<string, string | undefined>;
}

type ShellKind = ShellLaunch['shellKind'];

/** Classifies a shell path by its executable name (`bash`, `bash5`, `zsh-5.9`, ...). */
function shellKindOf(shell: string): ShellKind {
  const name = basename(shell).replace(/^-/, '');
  if (/^bash[\d.-]*$/.test(name)) return 'bash';
  if (/^zsh[\d.-]*$/.test(name)) return 'zsh';
  return 'other';
}

function shortHash(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex').slice(0, 12);
}

/**
 * Writes `content` to `path` unless it already holds exactly that. The write goes through a unique
 * temporary file and a rename, so concurrent callers never expose a partially written script.
 */
function writeFileAtomic(path: string, content: string): void {
  try {
    if (readFileSync(path, 'utf8') === content) return;
  } catch {
    // Missing or unreadable: (re)write it below.
  }
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, content, { mode: 0o600 });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

function prepareBash(opts: ShellLaunchOptions): ShellLaunch {
  ensureDir(opts.scriptDir);
  const script = join(opts.scriptDir, `bash-${shortHash(BASH_SCRIPT)}.sh`);
  writeFileAtomic(script, BASH_SCRIPT);
  return {
    file: opts.shell,
    args: ['--init-file', script, '-i'],
    env: { PTYRELAY_NONCE: opts.nonce, PTYRELAY_LOGIN: opts.login ? '1' : '0' },
    supportsCommandDetection: true,
    shellKind: 'bash',
  };
}

function prepareZsh(opts: ShellLaunchOptions): ShellLaunch {
  const dir = join(opts.scriptDir, `zsh-${shortHash(ZSHENV_SCRIPT, ZPROFILE_SCRIPT, ZSHRC_SCRIPT)}`);
  ensureDir(dir);
  writeFileAtomic(join(dir, '.zshenv'), ZSHENV_SCRIPT);
  writeFileAtomic(join(dir, '.zprofile'), ZPROFILE_SCRIPT);
  writeFileAtomic(join(dir, '.zshrc'), ZSHRC_SCRIPT);
  const home = opts.userEnv.HOME || homedir();
  return {
    file: opts.shell,
    args: opts.login ? ['-l', '-i'] : ['-i'],
    env: {
      ZDOTDIR: dir,
      PTYRELAY_USER_ZDOTDIR: opts.userEnv.ZDOTDIR || home,
      PTYRELAY_NONCE: opts.nonce,
    },
    supportsCommandDetection: true,
    shellKind: 'zsh',
  };
}

/**
 * Decides how to spawn `opts.shell` with shell integration. For bash and zsh the integration scripts
 * are written to `opts.scriptDir` (idempotent, content-addressed names) and load the user's own startup
 * files, which are never modified. Other shells are spawned plainly without command detection.
 */
export function prepareShellLaunch(opts: ShellLaunchOptions): ShellLaunch {
  switch (shellKindOf(opts.shell)) {
    case 'bash':
      return prepareBash(opts);
    case 'zsh':
      return prepareZsh(opts);
    default:
      return {
        file: opts.shell,
        args: opts.login ? ['-l'] : [],
        env: {},
        supportsCommandDetection: false,
        shellKind: 'other',
      };
  }
}

/** The user's login shell: $SHELL, else os.userInfo().shell, else /bin/sh. */
export function defaultShell(env: Record<string, string | undefined> = process.env): string {
  if (env.SHELL) return env.SHELL;
  try {
    const shell = userInfo().shell;
    if (shell) return shell;
  } catch {
    // No passwd entry for this uid.
  }
  return '/bin/sh';
}
