import { fill, h } from './dom.js';
import type { TerminalSummary } from './schemas.js';

/** Signals offered in the toolbar. */
export const SIGNALS = [
  'SIGINT',
  'SIGTERM',
  'SIGHUP',
  'SIGQUIT',
  'SIGKILL',
  'SIGTSTP',
  'SIGCONT',
  'SIGUSR1',
  'SIGUSR2',
];

/** What the tab row needs: the open terminals in order and the one in view. */
export interface TabsModel {
  open: string[];
  active: string | undefined;
  label(id: string): string;
}

export interface TabsActions {
  activate(id: string): void;
  hide(id: string): void;
}

/** The row of open terminals: a tab each (Alt+Shift+n for the first nine) with its hide button. */
export function renderTabs(el: HTMLElement, m: TabsModel, on: TabsActions): void {
  const tabs = m.open.map((id, i) => {
    const selected = id === m.active;
    return h(
      'div',
      { class: `tab${selected ? ' selected' : ''}`, 'data-tab': id },
      h(
        'button',
        {
          type: 'button',
          role: 'tab',
          'data-focus': `tab:${id}`,
          'aria-selected': String(selected),
          title: i < 9 ? `Alt+Shift+${i + 1}` : undefined,
          onclick: () => on.activate(id),
        },
        m.label(id),
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'tab-close',
          'data-focus': `hide:${id}`,
          'aria-label': `Hide ${m.label(id)} (keeps running)`,
          onclick: () => on.hide(id),
        },
        '×',
      ),
    );
  });
  fill(el, ...tabs);
}

/** What the toolbar needs about the terminal in view. */
export interface ToolbarModel {
  id: string | undefined;
  summary: TerminalSummary | undefined;
  /** This page's client holds the terminal's claim (it may type, rename, signal, close). */
  mine: boolean;
  split: boolean;
  signalChoice: string;
}

export interface ToolbarActions {
  rename(id: string): void;
  signal(id: string, signal: string): void;
  chooseSignal(signal: string): void;
  toggleSplit(): void;
  copy(id: string): void;
  paste(id: string): void;
  close(id: string): void;
}

/** The actions on the terminal in view (empty when none is). */
export function renderToolbar(el: HTMLElement, m: ToolbarModel, on: ToolbarActions): void {
  const id = m.id;
  if (!id) {
    fill(el);
    return;
  }
  const t = m.summary;
  const select = h(
    'select',
    { 'aria-label': 'Signal to send', disabled: !m.mine, 'data-focus': 'signal' },
    ...SIGNALS.map((x) => h('option', { value: x, selected: x === m.signalChoice }, x)),
  );
  select.addEventListener('change', () => on.chooseSignal(select.value));
  const button = (label: string, key: string, enabled: boolean, onclick: () => void, cls?: string) =>
    h('button', { type: 'button', class: cls, disabled: !enabled, 'data-focus': key, onclick }, label);
  fill(
    el,
    h('span', { class: 'where' }, `${t?.host ?? ''}${t?.cwd ? ` · ${t.cwd}` : ''}`),
    button('Rename', 'rename', m.mine, () => on.rename(id)),
    select,
    button('Send signal', 'send-signal', m.mine, () => on.signal(id, select.value)),
    h(
      'button',
      {
        type: 'button',
        class: 'split-toggle',
        'data-focus': 'split',
        'aria-pressed': String(m.split),
        onclick: () => on.toggleSplit(),
      },
      'Split',
    ),
    button('Copy', 'copy', true, () => on.copy(id)),
    button('Paste', 'paste', m.mine, () => on.paste(id)),
    button('Close terminal', 'close', m.mine, () => on.close(id), 'danger'),
  );
}
