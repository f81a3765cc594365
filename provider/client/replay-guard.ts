/**
 * Replaying recorded output into a terminal emulator makes it answer every query in that output
 * again: a `\x1b[c` (DA) in the scrollback would produce a fresh `\x1b[?1;2c` that, forwarded to
 * the PTY, arrives at the shell as typed garbage. The guard writes snapshot/replay data with a
 * flag set and drops the emulator's reports (DA, DSR/CPR, DECRQM, DECRQSS, OSC colour and window
 * reports) while it is set; keystrokes and the replies to live output pass through.
 */

/** What the guard needs of an xterm.js `Terminal` (browser or `@xterm/headless`). */
export interface ReplayGuardTerminal {
  write(data: string | Uint8Array, callback?: () => void): void;
  onData(listener: (data: string) => void): { dispose(): void };
  onBinary?(listener: (data: string) => void): { dispose(): void };
}

/** What {@link createReplayGuard} returns. */
export interface ReplayGuard {
  /** Writes recorded output; resolves once the emulator parsed it. Reports it triggers are dropped. */
  replay(data: string | Uint8Array): Promise<void>;
  /** Writes live output (its reports are forwarded). Same as `term.write`. */
  write(data: string | Uint8Array): void;
  /** What to send to the PTY: the terminal's onData/onBinary minus reports caused by a replay. */
  onData(listener: (data: string) => void): { dispose(): void };
  /** True while replayed data is being parsed. */
  readonly replaying: boolean;
  dispose(): void;
}

/**
 * One or more emulator reports and nothing else: CSI reports (`c` DA1/DA2/DA3 via `=`, `n` DSR,
 * `R` CPR, `t` window ops, `u` kitty keyboard flags, `$y` DECRQM), DCS (DECRQSS, XTGETTCAP) and
 * OSC (colour queries) answers.
 */
const REPORTS = /^(?:\x1b\[[?>=]?[\d;]*(?:[cnRtu]|\$y)|\x1bP[\s\S]*?\x1b\\|\x1b\][\s\S]*?(?:\x07|\x1b\\))+$/;

/** True when `data` looks like an emulator's report rather than a keystroke. */
export function isTerminalReport(data: string): boolean {
  return REPORTS.test(data);
}

/**
 * Wraps an xterm.js terminal for replay: use `guard.replay(snapshot.data)` and
 * `guard.replay(replay)` after an attach, `guard.write` (or `term.write`) for live output, and
 * `guard.onData` instead of `term.onData` to feed the PTY.
 */
export function createReplayGuard(term: ReplayGuardTerminal): ReplayGuard {
  let inFlight = 0;
  const listeners = new Set<(data: string) => void>();
  const forward = (data: string) => {
    if (inFlight > 0 && isTerminalReport(data)) return;
    for (const l of listeners) l(data);
  };
  const subs = [term.onData(forward), ...(term.onBinary ? [term.onBinary(forward)] : [])];
  return {
    replay(data) {
      inFlight++;
      return new Promise<void>((resolve) => {
        term.write(data, () => {
          inFlight--;
          resolve();
        });
      });
    },
    write(data) {
      term.write(data);
    },
    onData(listener) {
      listeners.add(listener);
      return { dispose: () => void listeners.delete(listener) };
    },
    get replaying() {
      return inFlight > 0;
    },
    dispose() {
      for (const s of subs) s.dispose();
      listeners.clear();
    },
  };
}
