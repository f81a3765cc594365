import { PtyRelayError } from '../provider/errors.js';
import { askCreate, askName, askToken } from './dialogs.js';
import { KeyBar } from './key-bar.js';
import { displayName, renderOverview } from './overview.js';
import { PageInput } from './page-input.js';
import { PageShell } from './page-shell.js';
import { PaneLayout } from './pane-layout.js';
import { showLayout } from './pane-visibility.js';
import { type RelayLinkState, RpcSocket } from './rpc-socket.js';
import {
  BackgroundEventSchema,
  ExitEventSchema,
  HelloResultSchema,
  HostsResultSchema,
  InputAckSchema,
  type LinkState,
  LinkStateEventSchema,
  OverviewSchema,
  ReattachEventSchema,
  type TerminalSummary,
} from './schemas.js';
import { isPageShortcut, pageShortcut } from './shortcuts.js';
import { renderTabs, renderToolbar } from './tab-bar.js';
import { TerminalPane } from './terminal-pane.js';
import { forgetToken, saveToken } from './token-store.js';
import { type DataFrame, decodeDataFrames } from './wire.js';

/**
 * The claim identity of every web page of this relay: terminals created from any page can be
 * typed into from any other (the token is the access boundary; claims only coordinate clients).
 */
export const WEB_CLIENT_ID = 'web';

/** The page: overview, tabs of terminals, actions, and the one connection that feeds them. */
export class App {
  private socket: RpcSocket | undefined;
  private readonly input: PageInput;
  private readonly panes = new Map<string, TerminalPane>();
  private readonly view = new PaneLayout();
  private hosts = new Map<string, LinkState>();
  private terminals: TerminalSummary[] = [];
  private readonly seenBells = new Map<string, number>();
  private readonly instanceId = crypto.randomUUID();
  /** Frames of terminals whose spawn reply has not arrived yet. */
  private spawnFrames: DataFrame[] | undefined;
  private link: RelayLinkState = { state: 'connecting' };
  /** The signal picked in the toolbar (kept across re-renders). */
  private signalChoice = 'SIGINT';

  private readonly shell = new PageShell();
  private readonly ui = this.shell.ui;
  private readonly keybar: KeyBar;

  constructor(private readonly root: HTMLElement) {
    this.input = new PageInput(
      (frame) => this.socket?.sendBinary(frame) ?? false,
      (err) => this.report(`${err.code}: ${err.message}`),
    );
    this.keybar = new KeyBar((data) => this.activePane()?.type(data));
    this.layout();
    document.addEventListener('keydown', (ev) => this.onShortcut(ev), true);
  }

  private layout(): void {
    this.shell.mount(this.root, this.keybar.element, {
      showList: () => this.showList(),
      create: () => void this.create(),
    });
    this.render();
  }

  // ─── Connection ──────────────────────────────────────────────────────────

  connect(token: string): void {
    this.socket?.close();
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;
    this.socket = new RpcSocket(url, token, {
      handshake: () => this.handshake(),
      notification: (m, p) => this.onNotification(m, p),
      binary: (msg) => this.onBinary(msg),
      link: (s) => this.onLink(s),
    });
    this.socket.start();
  }

  private request(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    if (!this.socket) return Promise.reject(new PtyRelayError('LINK_CLOSED', 'not connected'));
    return this.socket.request(method, params);
  }

  private async handshake(): Promise<void> {
    const hello = HelloResultSchema.parse(
      await this.request('ptyrelay/hello', { clientId: WEB_CLIENT_ID, instanceId: this.instanceId }),
    );
    const [hosts, overview] = await Promise.all([
      this.request('ptyrelay/hosts'),
      this.request('web/overview'),
    ]);
    this.hosts = new Map(HostsResultSchema.parse(hosts).hosts.map((x) => [x.name, x.state]));
    this.terminals = OverviewSchema.parse(overview).terminals;
    // Every open pane resumes by its id, listed or not: a relay of a fleet that has not linked the
    // terminal's host yet lists it only once the attach (or its catalog refresh) linked it.
    for (const [id, pane] of this.panes) {
      try {
        await pane.attach();
      } catch (err) {
        // One terminal that cannot be resumed must not keep the page from connecting.
        if (!(err instanceof PtyRelayError) || err.code === 'LINK_CLOSED') throw err;
        // Gone while the page was away.
        if (err.code === 'NOT_FOUND') this.dropPane(id);
        else this.report(`${id}: ${err.code}: ${err.message}`);
      }
    }
    this.input.resume(hello.input === 'known', hello.inputOrigin === true);
    this.render();
  }

  private onLink(s: RelayLinkState): void {
    if (s.state !== 'connected') this.input.linkDown();
    this.link = s;
    if (s.state === 'lost' && s.code === 'AUTH_FAILED') {
      forgetToken();
      void askToken(`${s.reason}. Enter the relay's token.`).then((t) => {
        if (!t) return;
        saveToken(t);
        this.connect(t);
      });
    }
    this.renderLink();
  }

  private onNotification(method: string, params: unknown): void {
    switch (method) {
      case 'web/overviewChanged':
        this.terminals = OverviewSchema.parse(params).terminals;
        this.render();
        return;
      case 'ptyrelay/linkState': {
        const e = LinkStateEventSchema.parse(params);
        this.hosts.set(e.host, e.state);
        this.render();
        return;
      }
      case 'ptyrelay/inputAck': {
        const a = InputAckSchema.parse(params);
        this.input.acknowledge(a.upTo, a.failed);
        return;
      }
      case 'ptyrelay/exit': {
        const e = ExitEventSchema.parse(params);
        this.panes.get(e.id)?.exit(e.incarnationId, e.exitCode);
        return;
      }
      case 'ptyrelay/background': {
        const e = BackgroundEventSchema.parse(params);
        this.panes.get(e.id)?.background(e);
        return;
      }
      case 'ptyrelay/reattach': {
        const e = ReattachEventSchema.parse(params);
        this.panes.get(e.id)?.reattached(e);
        return;
      }
      default:
        // Facts reach the page through the overview; progress and unknown notifications are not shown.
        return;
    }
  }

  private onBinary(msg: ArrayBuffer): void {
    let frames: DataFrame[];
    try {
      frames = decodeDataFrames(msg);
    } catch (err) {
      this.report(`bad data from the relay: ${(err as Error).message}`);
      return;
    }
    for (const f of frames) {
      const pane = this.panes.get(f.id);
      if (pane) pane.data(f);
      else this.spawnFrames?.push(f);
    }
  }

  // ─── Terminals ───────────────────────────────────────────────────────────

  private summary(id: string): TerminalSummary | undefined {
    return this.terminals.find((t) => t.id === id);
  }

  private owns(id: string): boolean {
    return this.summary(id)?.owner === `client:${WEB_CLIENT_ID}`;
  }

  private newPane(id: string): TerminalPane {
    const pane = new TerminalPane(
      id,
      {
        request: (m, p) => this.request(m, p),
        notify: (m, p) => this.socket?.notify(m, p),
        input: (tid, data) => this.input.write(tid, this.keybar.transform(data)),
        isPageShortcut,
        focused: (tid) => {
          if (tid !== this.view.active && this.view.pair?.includes(tid)) void this.activate(tid);
        },
        report: (msg) => this.report(msg),
      },
      () => this.owns(id),
    );
    this.panes.set(id, pane);
    this.ui.panes.append(pane.element);
    pane.element.hidden = true;
    return pane;
  }

  async open(id: string): Promise<void> {
    let pane = this.panes.get(id);
    if (!pane) {
      pane = this.newPane(id);
      await this.activate(id);
      try {
        await pane.attach();
      } catch (err) {
        this.report(`cannot open ${id}: ${(err as Error).message}`);
      }
      return;
    }
    await this.activate(id);
  }

  private async activate(id: string): Promise<void> {
    this.view.activate(id);
    document.body.classList.add('show-terminal');
    this.render();
    await showLayout(this.view, this.ui.panes, this.panes);
  }

  /** Two terminals side by side: the active one and the one used before it. */
  async toggleSplit(): Promise<void> {
    if (!this.view.toggleSplit((x) => this.panes.has(x))) {
      this.report('open a second terminal to split the view');
      return;
    }
    this.render();
    await showLayout(this.view, this.ui.panes, this.panes);
  }

  private activePane(): TerminalPane | undefined {
    return this.view.active ? this.panes.get(this.view.active) : undefined;
  }

  async create(host?: string): Promise<void> {
    const req = await askCreate([...this.hosts.keys()], host ?? 'local');
    if (!req) return;
    const params: Record<string, unknown> = { host: req.host, cols: 80, rows: 24, manualAck: true };
    if (req.command) {
      // A command line with arguments runs through the host's sh.
      if (/\s/.test(req.command)) Object.assign(params, { command: '/bin/sh', args: ['-c', req.command] });
      else params.command = req.command;
    }
    if (req.cwd) params.cwd = req.cwd;
    const frames: DataFrame[] = [];
    this.spawnFrames = frames;
    let raw: unknown;
    try {
      raw = await this.request('ptyrelay/spawn', params);
    } catch (err) {
      this.report(`cannot create a terminal on ${req.host}: ${(err as Error).message}`);
      return;
    } finally {
      if (this.spawnFrames === frames) this.spawnFrames = undefined;
    }
    const id = (raw as { id?: unknown }).id;
    if (typeof id !== 'string') {
      this.report('the relay answered the spawn without an id');
      return;
    }
    if (!this.summary(id)) {
      this.terminals = [
        ...this.terminals,
        {
          id,
          host: req.host,
          title: req.command ?? 'shell',
          owner: `client:${WEB_CLIENT_ID}`,
          bytesPerSec: 0,
          bells: 0,
          createdAt: Date.now(),
        },
      ];
    }
    const pane = this.newPane(id);
    await this.activate(id);
    await pane.settle(
      raw,
      frames.filter((f) => f.id === id),
    );
  }

  /** Stops showing a terminal (it keeps running). */
  async hide(id: string): Promise<void> {
    const pane = this.panes.get(id);
    if (!pane) return;
    // Leave it in the foreground for everyone else, then stop receiving it.
    await pane.setVisible(true);
    this.request('ptyrelay/detach', { id }).catch((err: Error) => this.report(err.message));
    this.dropPane(id);
  }

  private dropPane(id: string): void {
    this.panes.get(id)?.dispose();
    this.panes.delete(id);
    const next = this.view.forget(id);
    if (next) void this.activate(next);
    this.render();
  }

  private async closeTerminal(id: string): Promise<void> {
    try {
      await this.request('ptyrelay/shutdown', { id });
      this.dropPane(id);
    } catch (err) {
      this.report(`cannot close ${id}: ${(err as Error).message}`);
    }
  }

  private async rename(id: string): Promise<void> {
    const t = this.summary(id);
    const name = await askName(t?.name ?? t?.title ?? '');
    if (name === undefined) return;
    await this.request('web/rename', { id, name }).catch((err: Error) => this.report(err.message));
  }

  private async signal(id: string, signal: string): Promise<void> {
    await this.request('ptyrelay/signal', { id, signal }).then(
      () => this.report(`${signal} sent to ${id}`),
      (err: Error) => this.report(`cannot signal ${id}: ${err.message}`),
    );
  }

  // ─── Rendering ───────────────────────────────────────────────────────────

  private render(): void {
    if (this.view.active) this.seenBells.set(this.view.active, this.summary(this.view.active)?.bells ?? 0);
    // Re-rendering replaces elements: the keyboard focus moves to the new one with the same key.
    const focusKey = (document.activeElement as HTMLElement | null)?.dataset?.focus;
    renderOverview(
      this.ui.overview,
      {
        hosts: this.hosts,
        terminals: this.terminals,
        inView: this.view.active,
        seenBells: this.seenBells,
        clientId: WEB_CLIENT_ID,
      },
      { open: (id) => void this.open(id), create: (host) => void this.create(host) },
    );
    this.renderTabs();
    this.renderToolbar();
    if (focusKey) this.root.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focusKey)}"]`)?.focus();
    this.ui.empty.hidden = this.panes.size > 0;
  }

  private label(id: string): string {
    return displayName(this.summary(id) ?? { id, title: '' });
  }

  private renderTabs(): void {
    renderTabs(
      this.ui.tabs,
      { open: [...this.panes.keys()], active: this.view.active, label: (id) => this.label(id) },
      { activate: (id) => void this.activate(id), hide: (id) => void this.hide(id) },
    );
  }

  private renderToolbar(): void {
    const id = this.view.active;
    renderToolbar(
      this.ui.toolbar,
      {
        id,
        summary: id ? this.summary(id) : undefined,
        mine: id ? this.owns(id) : false,
        split: this.view.pair !== undefined,
        signalChoice: this.signalChoice,
      },
      {
        rename: (t) => void this.rename(t),
        signal: (t, sig) => void this.signal(t, sig),
        chooseSignal: (sig) => {
          this.signalChoice = sig;
        },
        toggleSplit: () => void this.toggleSplit(),
        copy: (t) => void this.panes.get(t)?.copy(),
        paste: (t) => void this.panes.get(t)?.pasteFromClipboard(),
        close: (t) => void this.closeTerminal(t),
      },
    );
  }

  private renderLink(): void {
    this.shell.showLink(this.link);
  }

  report(message: string): void {
    this.shell.toast(message);
  }

  private showList(): void {
    document.body.classList.remove('show-terminal');
    this.ui.overview.querySelector<HTMLElement>('.term-row.current button, .term-row button')?.focus();
  }

  private onShortcut(ev: KeyboardEvent): void {
    const cut = pageShortcut(ev);
    if (!cut) return;
    ev.preventDefault();
    ev.stopPropagation();
    if (cut.kind === 'list') this.showList();
    else if (cut.kind === 'new') void this.create();
    else {
      const id = [...this.panes.keys()][cut.index];
      if (id) void this.activate(id);
    }
  }
}
