import { execFile } from 'node:child_process';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { waitFor } from './local-daemon.js';

/** The built CLI entry (tests run `npm run build` first). */
export const CLI_MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');

/** One CLI run, generously: a Node start takes seconds on a machine shared by many test runs. */
const CLI_RUN_TIMEOUT_MS = 60_000;
/** Waiting for a CLI in a PTY to print something or exit. */
const CLI_WAIT_MS = 30_000;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one CLI command to completion as a child process (stdin: /dev/null, not a tty). */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { timeoutMs?: number; cwd?: string; main?: string; maxBuffer?: number } = {},
): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [opts.main ?? CLI_MAIN, ...args],
      {
        env,
        timeout: opts.timeoutMs ?? CLI_RUN_TIMEOUT_MS,
        cwd: opts.cwd,
        // History exports print megabytes.
        maxBuffer: opts.maxBuffer ?? 64 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

/** A CLI command in a real PTY, like a user at a terminal. */
export function cliInPty(
  args: string[],
  env: NodeJS.ProcessEnv,
  size = { cols: 100, rows: 30 },
  cwd?: string,
) {
  const p = pty.spawn(process.execPath, [CLI_MAIN, ...args], {
    ...size,
    ...(cwd !== undefined ? { cwd } : {}),
    env: { ...env, TERM: 'xterm-256color' },
  });
  let out = '';
  let exit: number | undefined;
  p.onData((d) => {
    out += d;
  });
  p.onExit((e) => {
    exit = e.exitCode;
  });
  return {
    p,
    text: () => out,
    exited: () => exit,
    wait: (s: string | RegExp, ms = CLI_WAIT_MS) =>
      waitFor(() => (typeof s === 'string' ? out.includes(s) : s.test(out)), ms, JSON.stringify(String(s))),
    waitExit: () => waitFor(() => exit !== undefined, CLI_WAIT_MS, `exit of ptyrelay ${args.join(' ')}`),
  };
}

/** Top-level keys of a JSON object text in order, duplicates kept (JSON.parse would merge them). */
export function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) keys.push(JSON.parse(line.slice(i, j + 1)));
      expectKey = false;
      i = j;
    } else if (ch === '{' || ch === '[') {
      depth++;
      expectKey = ch === '{' && depth === 1;
    } else if (ch === '}' || ch === ']') depth--;
    else if (ch === ',' && depth === 1) expectKey = true;
  }
  return keys;
}
