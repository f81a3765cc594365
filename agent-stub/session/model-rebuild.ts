import type { RebuildStep } from './model-protocol.js';
import { type ModelSnapshotData, TerminalModel } from './terminal-model.js';

/** A model built from `steps` (worker side); `done` once it parsed them all. */
export function rebuildModel(
  steps: readonly RebuildStep[],
  scrollbackRows: number,
  done: () => void,
): TerminalModel {
  const first = steps[0];
  const size = first?.kind === 'size' ? first : { cols: 80, rows: 24 };
  const model = new TerminalModel(size.cols, size.rows, scrollbackRows);
  for (const s of steps) {
    if (s.kind === 'data') model.write(s.data, () => {});
    else if (s.kind === 'resize') model.resize(s.cols, s.rows);
    else if (s.kind === 'clear') model.clear();
  }
  model.snapshot(0, () => done());
  return model;
}

/** True when both models show the same screen, modes and cursor (their scrollback aside). */
export function sameScreen(a: ModelSnapshotData, b: ModelSnapshotData): boolean {
  return (
    a.data === b.data && a.cols === b.cols && a.rows === b.rows && a.alternateScreen === b.alternateScreen
  );
}
