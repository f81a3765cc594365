import type { AgentReadResult, ScreenSnapshot } from '../../provider/contract.js';
import type { TerminalPalette } from '../../provider/terminal-queries.js';

/** Messages between a session and the screen-model worker thread. */
export type ToModel =
  /** `palette`: the model answers terminal queries (the session writes the replies to its PTY). */
  | { kind: 'open'; sid: string; cols: number; rows: number; scrollback: number; palette?: TerminalPalette }
  | { kind: 'data'; sid: string; seq: number; data: Uint8Array }
  | { kind: 'resize'; sid: string; cols: number; rows: number }
  | { kind: 'snapshot'; sid: string; req: number; scrollbackRows?: number }
  | { kind: 'clear'; sid: string }
  | { kind: 'text'; sid: string; req: number; offset: number; count: number; maxBytes: number }
  | { kind: 'close'; sid: string }
  /** Drop the scrollback until `grow` or `unshrink` (the session's log holds its bytes). */
  | { kind: 'shrink'; sid: string }
  /** Keep scrollback again from here on, without rebuilding what was dropped. */
  | { kind: 'unshrink'; sid: string }
  /**
   * Rebuild the model from the log (everything posted so far, up to output position `upTo`);
   * adopted when its screen matches, or whatever it shows with `force` (the worker was lost and
   * the live model restarted empty).
   */
  | { kind: 'grow'; sid: string; steps: RebuildStep[]; upTo: number; force?: boolean };

/** How a model is rebuilt: its size at the start, then the stream with the resizes and clears in it. */
export type RebuildStep =
  | { kind: 'size'; cols: number; rows: number }
  | { kind: 'data'; data: Uint8Array }
  | { kind: 'resize'; cols: number; rows: number }
  | { kind: 'clear' };

export type FromModel =
  | { kind: 'snapshot'; sid: string; req: number; snapshot: ScreenSnapshot }
  | { kind: 'progress'; sid: string; seq: number }
  | { kind: 'text'; sid: string; req: number; page: AgentReadResult }
  /** A `grow` finished: `adopted` false when the rebuilt screen differed (the live one was kept). */
  | { kind: 'grown'; sid: string; adopted: boolean }
  /** A snapshot or text request named a model that is closed: nothing will answer it otherwise. */
  | { kind: 'gone'; sid: string; req: number }
  /** The model's answer to a terminal query in the output, for the PTY. */
  | { kind: 'reply'; sid: string; data: string };

/** What the daemon hands the model worker at its start. */
export interface ModelWorkerData {
  /** The malloc-trim addon beside the stub bundle (the worker has no file path of its own). */
  heapTrimPath?: string;
}
