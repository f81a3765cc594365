/**
 * What a suite needs from the machine (sshd, Docker, Chromium, a shell, node builds…), and what
 * happens when it is missing: on a developer machine the suite is skipped and says why; when
 * `PTYRELAY_REQUIRE` names the capability (CI sets it, `.ci/run`), the missing capability fails the
 * run with its name instead of passing silently. `PTYRELAY_REQUIRE=all` requires every one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** The capabilities suites ask for, with what each stands for (docs/testing.md lists them too). */
export const CAPABILITIES = {
  sshd: 'OpenSSH sshd and ssh-keygen (and its sftp-server where a suite runs it) for the SSH suites',
  docker: 'a Docker engine and the locally built host images, for the container suites',
  chromium: 'Chromium (/usr/bin/chromium) for the web page suites',
  bash: 'bash for the shell-integration, quoting and deploy suites',
  zsh: 'zsh for the shell-integration and quoting suites',
  'node-pty': "node-pty's native build (pty.node)",
  'node-matrix': 'official Node builds 18, 20, 22, 24 and 26 (.ci/node-builds.sh, PTYRELAY_TEST_NODES)',
  root: "root, to create throwaway users, strace other users' processes and mount a tmpfs",
  strace: 'strace, for the syscall-count suites',
  openssl: 'openssl, for the TLS suite',
  dropbear: 'dropbear, for the non-OpenSSH server suite',
  python3: 'python3, for the agent suites that run it',
  'ssh-client':
    'the OpenSSH client tools (/usr/bin/ssh, /usr/bin/ssh-keygen) for the ssh -G and known_hosts cross-checks',
  shells: 'the other shells the deploy and quoting suites run (sh, dash, fish, tcsh)',
  mount: 'mount and umount, and a kernel that lets root mount a tmpfs, for the full-disk suites',
  'proc-probe':
    "the stub's /proc tty-wait probe: Linux on an architecture it knows the syscalls of (x64, arm64)",
  'malloc-trim':
    "the daemon's malloc-trim addon (dist/stub/native/malloc-trim.node: npm run build compiles it with cc)",
  'pty-prebuilds':
    'the pinned @lydell node-pty prebuilts for linux-x64 and linux-arm64 (vendor/node-pty-prebuilds: npm run build fetches them)',
} as const;

export type Capability = keyof typeof CAPABILITIES;

/** The capabilities `PTYRELAY_REQUIRE` names (comma- or space-separated; `all` for every one). */
export function requiredCapabilities(env: NodeJS.ProcessEnv = process.env): Set<string> {
  const names = (env.PTYRELAY_REQUIRE ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  return new Set(names.includes('all') ? Object.keys(CAPABILITIES) : names);
}

/** A required capability that is missing: thrown where the suite is declared, so its file fails. */
export class MissingCapabilityError extends Error {
  constructor(
    readonly capability: Capability,
    readonly why: string,
  ) {
    super(`required capability '${capability}' is missing (PTYRELAY_REQUIRE): ${why}`);
    this.name = 'MissingCapabilityError';
  }
}

const said = new Set<string>();

/**
 * `missing` is undefined when the capability is there, else why it is not. Returns whether the
 * suite can run. Missing and required: throws {@link MissingCapabilityError}. Missing and not
 * required: prints why once per capability and file, and the caller skips.
 */
export function capability(name: Capability, missing: string | undefined, env = process.env): boolean {
  if (missing === undefined) return true;
  if (requiredCapabilities(env).has(name)) throw new MissingCapabilityError(name, missing);
  const line = `skipped: ${name} is missing (${missing})`;
  if (!said.has(line)) {
    said.add(line);
    console.warn(line);
  }
  return false;
}

/**
 * Checks every capability given (each call reports or, when required, throws) and returns whether
 * all are there: `allOf(sshdAvailable(), rootAvailable('…'))`, not `&&`, which would not ask the second.
 */
export function allOf(...available: boolean[]): boolean {
  return available.every(Boolean);
}

/** Why `paths` are not all there (undefined when they are): `/a and /b are not installed (why)`. */
export function filesMissing(paths: readonly string[], why?: string): string | undefined {
  const absent = paths.filter((p) => !existsSync(p));
  if (absent.length === 0) return undefined;
  const verb = absent.length === 1 ? 'is' : 'are';
  return `${absent.join(' and ')} ${verb} not installed${why ? ` (${why})` : ''}`;
}

/** Capability `root`: whether this process runs as root; `forWhat` says what needs it. */
export function rootAvailable(forWhat: string): boolean {
  return capability('root', process.getuid?.() === 0 ? undefined : `${forWhat} needs root`);
}

/** Capability `zsh`: whether `zsh` on PATH runs. */
export function zshAvailable(): boolean {
  const r = spawnSync('zsh', ['-fc', ''], { stdio: 'ignore', timeout: 30_000 });
  return capability(
    'zsh',
    r.error || r.status !== 0 ? 'zsh is not on PATH (apt-get install zsh)' : undefined,
  );
}

/** Capability `python3`: whether `python3` on PATH runs. */
export function python3Available(): boolean {
  const r = spawnSync('python3', ['-c', ''], { stdio: 'ignore', timeout: 30_000 });
  const why = r.error
    ? `python3 is not on PATH (${r.error.message})`
    : r.status !== 0
      ? `python3 -c '' exited with ${r.status ?? r.signal}`
      : undefined;
  return capability('python3', why);
}
