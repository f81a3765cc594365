import type { PaneLayout } from './pane-layout.js';
import type { TerminalPane } from './terminal-pane.js';

/**
 * Applies the layout to the page: the active terminal (and its split partner) are shown at once
 * and the active one takes the focus then, before the relay has answered (keys typed at once, a
 * new terminal's first command, reach it instead of the page); then the relay is told: the shown
 * panes leave the background first, every other one is put in the background after.
 */
export async function showLayout(
  layout: PaneLayout,
  container: HTMLElement,
  panes: ReadonlyMap<string, TerminalPane>,
): Promise<void> {
  const shown = layout.shown();
  container.classList.toggle('split', layout.pair !== undefined);
  const foreground: Promise<void>[] = [];
  const hide: TerminalPane[] = [];
  for (const [id, pane] of panes) {
    pane.element.classList.toggle('left', layout.pair?.[0] === id);
    pane.element.classList.toggle('right', layout.pair?.[1] === id);
    pane.element.classList.toggle('secondary', layout.pair !== undefined && id !== layout.active);
    // setVisible shows or hides the pane before it returns; its promise is the relay's answer.
    if (shown.has(id)) foreground.push(pane.setVisible(true));
    else hide.push(pane);
  }
  if (layout.active !== undefined) panes.get(layout.active)?.focus();
  await Promise.all(foreground);
  for (const pane of hide) await pane.setVisible(false);
}
