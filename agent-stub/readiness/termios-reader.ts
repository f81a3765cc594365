import { execFile } from 'node:child_process';

/**
 * The two line-discipline flags of a tty that tell a password prompt from other input: node-pty
 * has no tcgetattr and /proc does not show termios, so `stty -a -F <tty>` (GNU coreutils and
 * busybox; no compiler on the host) prints them. It costs one short process (about 2 ms) and
 * runs only when a send ends with a program waiting for input.
 */
export interface TtyModes {
  /** ICANON: the kernel edits the line (cooked mode); readline-style programs turn it off. */
  icanon: boolean;
  /** ECHO: typed characters are echoed; password prompts turn it off. */
  echo: boolean;
}

/** stty answers in a few ms; a host so loaded that it does not within this gets no answer. */
const STTY_TIMEOUT_MS = 2000;

/** The flags in `stty -a` output (words `icanon`/`-icanon`, `echo`/`-echo`), or undefined. */
export function parseSttyModes(text: string): TtyModes | undefined {
  const words = new Set(text.split(/[\s;]+/));
  const flag = (name: string) => (words.has(name) ? true : words.has(`-${name}`) ? false : undefined);
  const icanon = flag('icanon');
  const echo = flag('echo');
  return icanon === undefined || echo === undefined ? undefined : { icanon, echo };
}

/** `tty`'s flags now, or undefined when stty is missing, fails or is too slow. */
export function readTtyModes(tty: string): Promise<TtyModes | undefined> {
  return new Promise((resolve) => {
    execFile(
      'stty',
      ['-a', '-F', tty],
      { timeout: STTY_TIMEOUT_MS, env: { ...process.env, LC_ALL: 'C' } },
      (err, stdout) => resolve(err ? undefined : parseSttyModes(stdout)),
    );
  });
}
