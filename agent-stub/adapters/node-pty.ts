import type * as pty from 'node-pty';
import { warnShapeOnce } from './shape-warning.js';

/**
 * The one place the stub reaches past node-pty's public API (its UnixTerminal's fields, which its
 * typings do not export), written against {@link NODE_PTY_PINNED} (package.json pins it exactly).
 * Each use has a public fallback; {@link ptyInternals} checks the shape on every terminal and
 * the daemon's log says once when it differs. Contract test: test/unit/adapter-node-pty.test.ts.
 *
 * - `fd` and `_writeStream._writeQueue`: input is written on the daemon's thread when node-pty has
 *   nothing queued (pty-input-writer.ts); fallback: node-pty's own queued writer.
 * - `_socket` and `_fd`: a program's last output is kept when node-pty would destroy the PTY
 *   socket before it was read (pty-process.ts keepOutputOnExit); fallback: node-pty's behaviour.
 * - `ptsName`: the terminal's /dev/pts path, for the input-wait probe; fallback: none (the
 *   probe then reads what /proc gives without it).
 */
export const NODE_PTY_PINNED = '1.1.0';

/** The PTY socket's members keepOutputOnExit wraps. */
export interface PtySocket {
  destroy: (e?: Error) => void;
  destroyed?: boolean;
  errored?: unknown;
  readableEnded?: boolean;
}

/** What a UnixTerminal holds past its typings, when it is shaped as the pinned version's. */
export interface PtyInternals {
  /** The master's descriptor (non-blocking). */
  fd: number;
  /** node-pty's queued writes: empty when nothing waits. */
  writeQueue: () => readonly unknown[];
  socket: PtySocket;
  ptsName: string | undefined;
}

interface UnixTerminalShape {
  fd?: unknown;
  _fd?: unknown;
  _writeStream?: { _writeQueue?: unknown };
  _socket?: { destroy?: unknown };
  ptsName?: unknown;
}

/** Why `proc` is not shaped as the pinned version's UnixTerminal, or undefined when it is. */
export function ptyShapeProblem(proc: pty.IPty): string | undefined {
  // Not wire data: node-pty's own object, read where its typings stop.
  const p = proc as unknown as UnixTerminalShape;
  if (typeof p.fd !== 'number') return "no numeric 'fd'";
  if (p._fd !== undefined && p._fd !== p.fd) return "'_fd' is not 'fd'";
  if (!Array.isArray(p._writeStream?._writeQueue)) return "no '_writeStream._writeQueue' array";
  if (typeof p._socket?.destroy !== 'function') return "no '_socket' with destroy()";
  if (p.ptsName !== undefined && typeof p.ptsName !== 'string') return "'ptsName' is not a string";
  return undefined;
}

/** `proc`'s internals, or undefined (logged once) when node-pty is shaped otherwise. */
export function ptyInternals(proc: pty.IPty): PtyInternals | undefined {
  const problem = ptyShapeProblem(proc);
  if (problem) {
    warnShapeOnce(
      'node-pty',
      NODE_PTY_PINNED,
      problem,
      "input goes through node-pty's writer and a PTY's last output may be lost at exit",
    );
    return undefined;
  }
  const p = proc as unknown as Required<UnixTerminalShape> & {
    fd: number;
    _writeStream: { _writeQueue: unknown[] };
    _socket: PtySocket;
  };
  return {
    fd: p.fd,
    writeQueue: () => p._writeStream._writeQueue,
    socket: p._socket,
    ptsName: typeof p.ptsName === 'string' ? p.ptsName : undefined,
  };
}
