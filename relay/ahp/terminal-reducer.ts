import type { TerminalAction, TerminalCommandPart, TerminalContentPart, TerminalState } from './types.js';

/**
 * The AHP terminal reducer: `(state, action) => state`, pure, exactly as the terminal-channel
 * spec defines each action's effect. Unknown action types return the state unchanged.
 */
export function terminalReducer(state: TerminalState, action: TerminalAction): TerminalState {
  switch (action.type) {
    case 'terminal/data': {
      const content = [...state.content];
      const tail = content.length > 0 ? content[content.length - 1] : undefined;
      if (tail && tail.type === 'command' && !tail.isComplete) {
        content[content.length - 1] = { ...tail, output: tail.output + action.data };
      } else if (tail && tail.type === 'unclassified') {
        content[content.length - 1] = { ...tail, value: tail.value + action.data };
      } else {
        content.push({ type: 'unclassified', value: action.data });
      }
      return { ...state, content };
    }
    case 'terminal/input':
      // Side effect only: the server forwards it to the PTY; output comes back as terminal/data.
      return state;
    case 'terminal/resized':
      return { ...state, cols: action.cols, rows: action.rows };
    case 'terminal/claimed':
      return { ...state, claim: action.claim };
    case 'terminal/titleChanged':
      return { ...state, title: action.title };
    case 'terminal/cwdChanged':
      return { ...state, cwd: action.cwd };
    case 'terminal/exited':
      return { ...state, exitCode: action.exitCode };
    case 'terminal/cleared':
      return { ...state, content: [] };
    case 'terminal/commandDetectionAvailable':
      return { ...state, supportsCommandDetection: true };
    case 'terminal/commandExecuted': {
      const part: TerminalCommandPart = {
        type: 'command',
        commandId: action.commandId,
        commandLine: action.commandLine,
        output: '',
        timestamp: action.timestamp,
        isComplete: false,
      };
      return { ...state, content: [...state.content, part], supportsCommandDetection: true };
    }
    case 'terminal/commandFinished': {
      const content = state.content.map((p): TerminalContentPart => {
        if (p.type !== 'command' || p.commandId !== action.commandId) return p;
        return { ...p, isComplete: true, exitCode: action.exitCode, durationMs: action.durationMs };
      });
      return { ...state, content };
    }
    default:
      // Unknown action types are ignored (forward compatibility).
      return state;
  }
}

/** Length of a part's text (UTF-16 code units). */
function partLength(p: TerminalContentPart): number {
  return p.type === 'command' ? p.output.length + p.commandLine.length : p.value.length;
}

/** Default bound of a snapshot's content: the last 256 Ki code units of output. */
export const DEFAULT_CONTENT_LIMIT = 256 * 1024;
/** Default bound of the number of content parts (each detected command adds one). */
export const DEFAULT_MAX_PARTS = 1000;

/**
 * Bounds a state's content to the last `maxChars` code units of output and the last `maxParts`
 * parts, dropping whole old parts and cutting the oldest remaining one. Pure; returns `state`
 * itself when nothing had to go. The server applies it after the reducer so snapshots stay
 * bounded; clients that reduce without it simply keep more history.
 */
export function boundContent(
  state: TerminalState,
  maxChars = DEFAULT_CONTENT_LIMIT,
  maxParts = DEFAULT_MAX_PARTS,
): TerminalState {
  const parts = state.content;
  let total = 0;
  for (const p of parts) total += partLength(p);
  if (total <= maxChars && parts.length <= maxParts) return state;
  let first = Math.max(0, parts.length - maxParts);
  for (let i = 0; i < first; i++) total -= partLength(parts[i]!);
  // Drop whole parts while what stays still holds at least maxChars; cut the next one.
  while (first < parts.length - 1 && total - partLength(parts[first]!) >= maxChars) {
    total -= partLength(parts[first]!);
    first++;
  }
  const content = parts.slice(first);
  const excess = total - maxChars;
  if (excess > 0 && content.length > 0) {
    const head = content[0]!;
    content[0] =
      head.type === 'unclassified'
        ? { ...head, value: head.value.slice(Math.min(excess, head.value.length)) }
        : { ...head, output: head.output.slice(Math.min(excess, head.output.length)) };
  }
  return { ...state, content };
}
