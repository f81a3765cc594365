import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  defaultShell,
  prepareShellLaunch,
  type ShellLaunchOptions,
} from '../../agent-stub/shell/shell-integration.js';
import { capability } from '../support/capabilities.js';

const NONCE = 'n0nce4f2e';
const TIMEOUT = 10_000;

/** Capability `bash` or `zsh`: the shell's path on PATH (undefined, printed or thrown when required, if none). */
function findShell(name: 'bash' | 'zsh'): string | undefined {
  let path: string | undefined;
  try {
    path = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    path = undefined;
  }
  capability(name, path ? undefined : `${name} is not on PATH (apt-get install ${name})`);
  return path;
}

const BASH = findShell('bash');
const ZSH = findShell('zsh');

interface Marker {
  kind: string;
  args: string[];
  /** Offset in the raw output, to relate markers to command output. */
  index: number;
}

function parseMarkers(out: string): Marker[] {
  const markers: Marker[] = [];
  for (const m of out.matchAll(/\x1b\]633;([A-Z])(?:;([^\x07]*))?\x07/g)) {
    markers.push({ kind: m[1]!, args: m[2] === undefined ? [] : m[2].split(';'), index: m.index! });
  }
  return markers;
}

/** A shell in a pty, driven one command at a time by waiting for prompt-start (A) markers. */
class Session {
  out = '';
  exited = false;
  private waiters = new Set<() => void>();

  constructor(readonly proc: pty.IPty) {
    proc.onData((d) => {
      this.out += d;
      for (const w of this.waiters) w();
    });
    proc.onExit(() => {
      this.exited = true;
      for (const w of this.waiters) w();
    });
  }

  markers(kind?: string): Marker[] {
    const all = parseMarkers(this.out);
    return kind ? all.filter((m) => m.kind === kind) : all;
  }

  waitFor(pred: () => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (pred()) {
          done();
          resolve();
        } else if (this.exited) {
          done();
          reject(new Error(`shell exited while waiting for ${what}; output: ${JSON.stringify(this.out)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what}; output: ${JSON.stringify(this.out)}`));
      }, TIMEOUT);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Whether the shell has printed `count` prompts, the last one completely (up to its B marker). */
  private prompted(count: number): boolean {
    const kinds = this.markers().map((m) => m.kind);
    return kinds.filter((k) => k === 'A').length >= count && kinds.lastIndexOf('B') > kinds.lastIndexOf('A');
  }

  /** Waits for the first prompt. */
  ready(): Promise<void> {
    return this.waitFor(() => this.prompted(1), 'first prompt');
  }

  /** Types `line`, waits for the next prompt and returns the raw output produced in between. */
  async run(line: string): Promise<string> {
    const start = this.out.length;
    const prompts = this.markers('A').length;
    this.proc.write(`${line}\r`);
    await this.waitFor(() => this.prompted(prompts + 1), `prompt after ${JSON.stringify(line)}`);
    return this.out.slice(start);
  }
}

let tmp: string;
let home: string;
let sessions: Session[];

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'ptyrelay-shell-'));
  home = join(tmp, 'home');
  mkdirSync(home);
  sessions = [];
});

afterEach(() => {
  for (const s of sessions) {
    try {
      s.proc.kill('SIGKILL');
    } catch {
      // Already gone.
    }
  }
  rmSync(tmp, { recursive: true, force: true });
});

function writeHome(files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(home, name, '..'), { recursive: true });
    writeFileSync(join(home, name), content);
  }
}

function start(shell: string, opts: Partial<ShellLaunchOptions> = {}): Session {
  const userEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm-256color' };
  const launch = prepareShellLaunch({
    shell,
    login: false,
    nonce: NONCE,
    scriptDir: join(tmp, 'scripts'),
    userEnv,
    ...opts,
  });
  const proc = pty.spawn(launch.file, launch.args, {
    cols: 120,
    rows: 30,
    cwd: home,
    env: { ...userEnv, LANG: 'C.UTF-8', ...launch.env },
  });
  const session = new Session(proc);
  sessions.push(session);
  return session;
}

/** The D marker's exit code produced by `run` output, or undefined if there was none. */
function exitCode(chunk: string): string | undefined {
  return parseMarkers(chunk).find((m) => m.kind === 'D')?.args[0];
}

const BASHRC = [
  'export RC_VAR=from_bashrc',
  "alias rc_alias='echo alias_output_ok'",
  "PROMPT_COMMAND='user_pc_status=$?; user_pc_ran=yes'",
  '',
].join('\n');

/** Checks the marker protocol on a ready shell; shared by bash and zsh. */
async function checkMarkers(s: Session): Promise<void> {
  expect(exitCode(await s.run('true'))).toBe('0');
  expect(exitCode(await s.run('false'))).toBe('1');
  const sub = await s.run('(exit 3)');
  expect(exitCode(sub)).toBe('3');
  expect(parseMarkers(sub).map((m) => m.kind)).toEqual(['E', 'C', 'D', 'P', 'A', 'B']);

  const special = await s.run("echo 'a;b\\c' >/dev/null");
  const e = parseMarkers(special).find((m) => m.kind === 'E');
  expect(e?.args).toEqual(["echo 'a\\x3bb\\\\c' >/dev/null", NONCE]);

  const cd = await s.run('cd /tmp');
  expect(parseMarkers(cd).find((m) => m.kind === 'P')?.args).toEqual(['Cwd=/tmp']);

  const empty = await s.run('');
  expect(parseMarkers(empty).map((m) => m.kind)).toEqual(['P', 'A', 'B']);

  await s.run(`env > ${join(tmp, 'child-env.txt')}`);
  const childEnv = readFileSync(join(tmp, 'child-env.txt'), 'utf8');
  expect(childEnv).not.toContain('PTYRELAY_');
  expect(childEnv).not.toContain(NONCE);
  expect(childEnv).not.toContain(join(tmp, 'scripts'));
}

describe.skipIf(!BASH)('bash integration', () => {
  it('loads ~/.bashrc for a non-login shell and emits all markers', async () => {
    writeHome({ '.bashrc': BASHRC });
    const s = start(BASH!);
    await s.ready();
    expect(await s.run('echo "v=$RC_VAR"')).toContain('v=from_bashrc');
    expect(await s.run('rc_alias')).toContain('alias_output_ok');
    await checkMarkers(s);
  });

  it('loads ~/.bash_profile for a login shell', async () => {
    writeHome({
      '.bashrc': BASHRC,
      '.bash_profile': 'export PROFILE_VAR=from_profile\n. ~/.bashrc\n',
      '.profile': 'export PROFILE_VAR=wrong_file\n',
    });
    const s = start(BASH!, { login: true });
    await s.ready();
    expect(await s.run('echo "v=$PROFILE_VAR,$RC_VAR"')).toContain('v=from_profile,from_bashrc');
    expect(await s.run('rc_alias')).toContain('alias_output_ok');
    expect(exitCode(await s.run('false'))).toBe('1');
  });

  it('keeps the user PROMPT_COMMAND running with the right $?', async () => {
    writeHome({ '.bashrc': BASHRC });
    const s = start(BASH!);
    await s.ready();
    await s.run('(exit 4)');
    expect(await s.run('echo "pc=$user_pc_ran,$user_pc_status"')).toContain('pc=yes,4');
    expect(s.markers('A').length).toBeGreaterThan(0);
  });

  it('supports an array PROMPT_COMMAND and a prompt command that rewrites PS1', async () => {
    writeHome({
      '.bashrc': "PROMPT_COMMAND=('pc_a=1' 'pc_b=2; PS1=\"custom> \"')\n",
    });
    const s = start(BASH!);
    await s.ready();
    expect(await s.run('echo "pc=$pc_a$pc_b"')).toContain('pc=12');
    const chunk = await s.run('true');
    expect(exitCode(chunk)).toBe('0');
    expect(chunk).toContain('custom> \x1b]633;B\x07');
    expect(chunk.split('633;B').length).toBe(2);
  });

  it('does not break under set -u and prints no errors', async () => {
    writeHome({ '.bashrc': `set -u\nHISTTIMEFORMAT='%F %T '\n${BASHRC}` });
    const s = start(BASH!);
    await s.ready();
    await checkMarkers(s);
    expect(await s.run('echo "opts=$-"')).toMatch(/opts=\S*u/);
    expect(s.out).not.toMatch(/unbound|command not found|syntax error/);
  });

  it('sends an empty command line rather than a wrong one for ignored history entries', async () => {
    writeHome({ '.bashrc': 'HISTCONTROL=ignorespace\n' });
    const s = start(BASH!);
    await s.ready();
    await s.run('echo first >/dev/null');
    const hidden = await s.run(' echo hidden >/dev/null');
    expect(parseMarkers(hidden).find((m) => m.kind === 'E')?.args).toEqual(['', NONCE]);
    expect(exitCode(hidden)).toBe('0');
  });
});

describe.skipIf(!ZSH)('zsh integration', () => {
  const zshrc = [
    'export RC_VAR=from_zshrc',
    "alias rc_alias='echo alias_output_ok'",
    "PS1='zsh-test%# '",
    '',
  ].join('\n');

  it('loads ~/.zshenv and ~/.zshrc and emits all markers', async () => {
    writeHome({ '.zshenv': 'export ENV_VAR=from_zshenv\n', '.zshrc': zshrc });
    const s = start(ZSH!);
    await s.ready();
    // $+ZDOTDIR is 0: the user had no ZDOTDIR, so none is left behind.
    expect(await s.run('echo "v=$RC_VAR,$ENV_VAR,$+ZDOTDIR"')).toContain('v=from_zshrc,from_zshenv,0');
    expect(await s.run('rc_alias')).toContain('alias_output_ok');
    await checkMarkers(s);
  });

  it('respects the user ZDOTDIR for a login shell, including .zprofile and .zlogin', async () => {
    const zdot = join(home, 'zdot');
    writeHome({
      '.zshrc': 'export RC_VAR=wrong_file\n',
      'zdot/.zshenv': 'export ENV_VAR=from_zshenv\n',
      'zdot/.zprofile': 'export PROFILE_VAR=from_zprofile\n',
      'zdot/.zshrc': `setopt nounset ksh_arrays\n${zshrc}`,
      'zdot/.zlogin': 'export LOGIN_VAR=from_zlogin\n',
    });
    const s = start(ZSH!, {
      login: true,
      userEnv: { PATH: process.env.PATH, HOME: home, ZDOTDIR: zdot },
    });
    await s.ready();
    const out = await s.run('echo "v=$RC_VAR,$ENV_VAR,$PROFILE_VAR,$LOGIN_VAR,$ZDOTDIR"');
    expect(out).toContain(`v=from_zshrc,from_zshenv,from_zprofile,from_zlogin,${zdot}`);
    await checkMarkers(s);
    expect(s.out).not.toMatch(/parameter not set|command not found|bad math/);
  });

  it('follows a ZDOTDIR changed by the user .zshenv', async () => {
    writeHome({
      '.zshenv': 'ZDOTDIR=$HOME/.config/zsh\n',
      '.config/zsh/.zshrc': zshrc,
    });
    const s = start(ZSH!);
    await s.ready();
    expect(await s.run('echo "v=$RC_VAR"')).toContain('v=from_zshrc');
  });
});

describe('launch preparation', () => {
  it('spawns other shells plainly', () => {
    const launch = prepareShellLaunch({
      shell: '/bin/sh',
      login: true,
      nonce: NONCE,
      scriptDir: join(tmp, 'scripts'),
      userEnv: { HOME: home },
    });
    expect(launch).toEqual({
      file: '/bin/sh',
      args: ['-l'],
      env: {},
      supportsCommandDetection: false,
      shellKind: 'other',
    });
  });

  it('writes scripts idempotently into a private directory', () => {
    const scriptDir = join(tmp, 'nested', 'scripts');
    const opts = { login: false, nonce: NONCE, scriptDir, userEnv: { HOME: home } };
    const a = prepareShellLaunch({ ...opts, shell: '/usr/bin/bash' });
    const b = prepareShellLaunch({ ...opts, shell: '/bin/bash' });
    const z1 = prepareShellLaunch({ ...opts, shell: '/usr/bin/zsh' });
    const z2 = prepareShellLaunch({ ...opts, shell: '/usr/bin/zsh', userEnv: { HOME: home, ZDOTDIR: '/x' } });
    expect(a.args).toEqual(b.args);
    expect(a.args[0]).toBe('--init-file');
    expect(a.env).toEqual({ PTYRELAY_NONCE: NONCE, PTYRELAY_LOGIN: '0' });
    expect(z1.env.ZDOTDIR).toBe(z2.env.ZDOTDIR);
    expect(z1.env.PTYRELAY_USER_ZDOTDIR).toBe(home);
    expect(z2.env.PTYRELAY_USER_ZDOTDIR).toBe('/x');
    expect(readdirSync(scriptDir).sort()).toHaveLength(2);
    expect(readdirSync(z1.env.ZDOTDIR!).sort()).toEqual(['.zprofile', '.zshenv', '.zshrc']);
  });

  it('picks the default shell from $SHELL, then the passwd entry', () => {
    expect(defaultShell({ SHELL: '/usr/bin/fish' })).toBe('/usr/bin/fish');
    expect(defaultShell({})).toBe(userInfo().shell || '/bin/sh');
  });
});
