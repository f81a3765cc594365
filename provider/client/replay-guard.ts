/**
 * A viewer's terminal emulator must never answer the terminal queries in what it displays: the
 * host's stub answers each query once, from its own screen model, whether 0, 1 or many viewers
 * watch (docs/architecture.md, "Terminal queries"). An emulator that answered as well would type
 * a second answer into the program — and replaying recorded output (a snapshot, scrollback)
 * would answer every old query in it again. The guard keeps the emulator silent: with the
 * terminal's parser at hand (xterm.js, browser or headless) it takes every query before the
 * emulator does (query-silencer.ts); without one it drops every report the emulator sends
 * (DA, DSR/CPR, DECRQM, DECRQSS, OSC colour and window reports). Keystrokes pass through.
 *
 * Changed in 0.1.0: reports are dropped always, not only while replayed data is parsed.
 */
import { type QueryParser, silenceQueries } from './query-silencer.js';

/** What the guard needs of an xterm.js `Terminal` (browser or `@xterm/headless`). */
export interface ReplayGuardTerminal {
  write(data: string | Uint8Array, callback?: () => void): void;
  onData(listener: (data: string) => void): { dispose(): void };
  onBinary?(listener: (data: string) => void): { dispose(): void };
  /** xterm.js's parser: with it, queries never reach the emulator's own handlers. */
  parser?: QueryParser;
}

/** What {@link createReplayGuard} returns. */
export interface ReplayGuard {
  /** Writes recorded output; resolves once the emulator parsed it. */
  replay(data: string | Uint8Array): Promise<void>;
  /** Writes live output. Same as `term.write`. */
  write(data: string | Uint8Array): void;
  /** What to send to the PTY: the terminal's onData/onBinary, never an answer to a query. */
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
  const silenced = term.parser ? silenceQueries(term.parser) : undefined;
  const forward = (data: string) => {
    // A silenced emulator sends no reports: what it sends is typed (a modified F3 is `ESC[1;5R`).
    if (!silenced && isTerminalReport(data)) return;
    for (const l of listeners) l(data);
  };
  const subs = [
    term.onData(forward),
    ...(term.onBinary ? [term.onBinary(forward)] : []),
    ...(silenced ? [silenced] : []),
  ];
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
