import { terminalReducer } from './terminal-reducer.js';
import type { TerminalAction, TerminalState } from './types.js';

/**
 * The actions that take any terminal state to `state`: `terminal/cleared`, then the content
 * part by part (output as `terminal/data`, detected commands as `commandExecuted`, their output
 * and `commandFinished`), then the metadata. Sent to a peer that fell out of the action log
 * instead of closing its connection: applied with the reducer, they leave it exactly where a
 * fresh subscribe would (see {@link terminalReducer}).
 */
export function resyncActions(state: TerminalState): TerminalAction[] {
  const out: TerminalAction[] = [{ type: 'terminal/cleared' }];
  if (state.supportsCommandDetection) out.push({ type: 'terminal/commandDetectionAvailable' });
  for (const part of state.content) {
    if (part.type === 'unclassified') {
      out.push({ type: 'terminal/data', data: part.value });
      continue;
    }
    out.push({
      type: 'terminal/commandExecuted',
      commandId: part.commandId,
      commandLine: part.commandLine,
      timestamp: part.timestamp,
    });
    if (part.output) out.push({ type: 'terminal/data', data: part.output });
    if (part.isComplete) {
      out.push({
        type: 'terminal/commandFinished',
        commandId: part.commandId,
        exitCode: part.exitCode,
        durationMs: part.durationMs,
      });
    }
  }
  out.push({ type: 'terminal/titleChanged', title: state.title });
  if (state.cwd !== undefined) out.push({ type: 'terminal/cwdChanged', cwd: state.cwd });
  if (state.cols !== undefined && state.rows !== undefined) {
    out.push({ type: 'terminal/resized', cols: state.cols, rows: state.rows });
  }
  out.push({ type: 'terminal/claimed', claim: state.claim });
  if (state.exitCode !== undefined) out.push({ type: 'terminal/exited', exitCode: state.exitCode });
  return out;
}

/** Applies `actions` to `state` with the reducer (what a client does with a resync). */
export function applyActions(state: TerminalState, actions: TerminalAction[]): TerminalState {
  return actions.reduce(terminalReducer, state);
}
