import { fill, h } from './dom.js';
import type { RelayLinkState } from './rpc-socket.js';

const TOAST_MS = 6000;

function describeLink(s: RelayLinkState): string {
  switch (s.state) {
    case 'connecting':
      return 'Connecting to the relay…';
    case 'connected':
      return 'Connected';
    case 'reconnecting':
      return `Relay link lost (${s.reason}). Reconnecting, attempt ${s.attempt}…`;
    case 'lost':
      return `Disconnected: ${s.reason}`;
  }
}

/** What the page's fixed controls do. */
export interface ShellActions {
  showList(): void;
  create(): void;
}

/**
 * The page's frame: top bar, relay link banner, the overview and workspace slots, and the
 * toast. It owns these elements; the App fills the slots.
 */
export class PageShell {
  readonly ui = {
    status: h('span', { class: 'link-status', role: 'status' }),
    banner: h('div', { class: 'banner', role: 'alert', hidden: true }),
    overview: h('nav', { class: 'overview', 'aria-label': 'Hosts and terminals' }),
    tabs: h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Open terminals' }),
    panes: h('div', { class: 'panes' }),
    toolbar: h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Terminal actions' }),
    toast: h('div', { class: 'toast', 'aria-live': 'polite' }),
    empty: h('p', { class: 'empty-view' }, 'Open a terminal from the list, or create one.'),
  };
  private toastTimer: ReturnType<typeof setTimeout> | undefined;

  /** Builds the frame into `root`; `keybar` is the on-screen key row under the panes. */
  mount(root: HTMLElement, keybar: HTMLElement, on: ShellActions): void {
    const back = h(
      'button',
      { type: 'button', class: 'back', 'aria-label': 'Show the terminal list', onclick: () => on.showList() },
      '☰ Terminals',
    );
    const create = h(
      'button',
      { type: 'button', class: 'primary', title: 'Alt+Shift+N', onclick: () => on.create() },
      '+ New terminal',
    );
    const ui = this.ui;
    fill(
      root,
      h('header', { class: 'topbar' }, back, h('h1', {}, 'ptyrelay'), ui.status, create),
      ui.banner,
      h(
        'main',
        { class: 'layout' },
        ui.overview,
        h('section', { class: 'workspace', 'aria-label': 'Terminal' }, ui.tabs, ui.toolbar, ui.panes, keybar),
      ),
      ui.toast,
    );
    ui.panes.append(ui.empty);
  }

  /** The relay link's state in the top bar, and a banner while it is not connected. */
  showLink(s: RelayLinkState): void {
    this.ui.status.textContent = s.state === 'connected' ? '● connected' : `● ${s.state}`;
    this.ui.status.className = `link-status ${s.state}`;
    this.ui.banner.hidden = s.state === 'connected';
    this.ui.banner.className = `banner ${s.state}`;
    this.ui.banner.textContent = describeLink(s);
  }

  /** A short message at the bottom of the page, gone after a few seconds. */
  toast(message: string): void {
    this.ui.toast.textContent = message;
    this.ui.toast.classList.add('shown');
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => this.ui.toast.classList.remove('shown'), TOAST_MS);
  }
}
