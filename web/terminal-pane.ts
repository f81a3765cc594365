import { FitAddon } from '@xterm/addon-fit';
import { WebLinksAddon } from '@xterm/addon-web-links';
import { Terminal } from '@xterm/xterm';
import { createReplayGuard, type ReplayGuard } from '../provider/client/replay-guard.js';
import { h } from './dom.js';
import { OutputFlow } from './output-flow.js';
import { AttachResultSchema, type BackgroundEvent, type ReattachEvent, type Snapshot } from './schemas.js';
import type { DataFrame } from './wire.js';

/** What a pane needs from the page's connection. */
export interface PaneLink {
  request(method: string, params: Record<string, unknown>): Promise<unknown>;
  notify(method: string, params: Record<string, unknown>): void;
  input(id: string, data: string): void;
  /** Keys the page handles itself (tab switching); the terminal must not see them. */
  isPageShortcut(ev: KeyboardEvent): boolean;
  /** The user moved the keyboard focus into this terminal. */
  focused(id: string): void;
  report(message: string): void;
}

/**
 * A shown terminal that has more output waiting than this, twice in a row a second apart, catches
 * up instead: it goes to the background and back, and the relay sends the screen as a snapshot
 * (what a person could not have read anyway is skipped; the stub's model still has it all).
 */
const CATCH_UP_BYTES = 512 * 1024;
const CATCH_UP_CHECK_MS = 1000;

/** Resize requests are sent once the size has been stable this long. */
const RESIZE_DEBOUNCE_MS = 60;

/**
 * The page's terminal font; .ci/run installs DejaVu Sans Mono (fonts-dejavu-core), which is what
 * Debian's Chromium draws with (it has no `ui-monospace`).
 */
const FONT_FAMILY = 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace';
const FONT_SIZE = 14;
/**
 * Rows a fifth taller than the font's own line. xterm's DOM renderer clips every row to its cell
 * (xtermjs/xterm.js#4067): at 14 px DejaVu Sans Mono has a 16 px line, its underscore lies on the
 * 17th pixel and was cut away whole (`a_b_c` read `a b c`), as was the top pixel of `Î` and the
 * bottom one of `|`. At 1.2 a row is 19 px and every glyph fits (test/integration/web-glyphs.test.ts).
 */
const LINE_HEIGHT = 1.2;

const THEME = {
  background: '#0f1419',
  foreground: '#d8dee9',
  cursor: '#f0c674',
  selectionBackground: '#3b4b61',
  black: '#1d2430',
  brightBlack: '#5c6773',
};

/**
 * One open terminal: an xterm.js view with fit and web-links, fed from the relay's Data frames.
 * It keeps the stream position (seq) and incarnation so a re-attach after any drop continues
 * exactly; writes snapshots and replays through the replay guard; acknowledges output as xterm
 * parses it (OutputFlow); and, while hidden, puts its terminal in the background (keep-tail)
 * and restores it from the snapshot that foregrounding brings.
 */
export class TerminalPane {
  readonly element: HTMLDivElement;
  readonly term: Terminal;
  private readonly fit = new FitAddon();
  private readonly guard: ReplayGuard;
  private readonly flow: OutputFlow;
  incarnationId: string | undefined;
  /** Seq of the next output byte this view expects. */
  seq = 0;
  exited: number | undefined;
  private attaching: DataFrame[] | undefined;
  /** Hidden and put in the background: output is counted, not drawn, until the snapshot comes. */
  private backgrounded = false;
  private awaitingForeground = false;
  private visible = false;
  private resizeTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly observer: ResizeObserver;
  private sentSize = '';
  private readonly catchUpTimer: ReturnType<typeof setInterval>;
  private behind = 0;
  private catchingUp = false;

  constructor(
    readonly id: string,
    private readonly link: PaneLink,
    readonly owned: () => boolean,
  ) {
    this.element = h('div', { class: 'pane', role: 'tabpanel', 'data-terminal': id });
    this.term = new Terminal({
      cursorBlink: true,
      fontFamily: FONT_FAMILY,
      fontSize: FONT_SIZE,
      lineHeight: LINE_HEIGHT,
      scrollback: 5000,
      theme: THEME,
      allowProposedApi: false,
    });
    this.term.loadAddon(this.fit);
    this.term.loadAddon(
      new WebLinksAddon((_ev, uri) => {
        window.open(uri, '_blank', 'noopener,noreferrer');
      }),
    );
    this.guard = createReplayGuard(this.term);
    this.flow = new OutputFlow(this.term, this.guard, {
      ack: (seq) => link.notify('ptyrelay/ack', { id, seq }),
      pause: (on) => {
        if (!this.owned()) return;
        link.request(on ? 'ptyrelay/pause' : 'ptyrelay/resume', { id }).catch((err: Error) => {
          link.report(`flow control for ${id}: ${err.message}`);
        });
      },
    });
    this.guard.onData((data) => {
      if (this.exited !== undefined) return;
      if (this.owned()) link.input(id, data);
      else link.report(`${id} belongs to another client: input is not sent`);
    });
    this.term.attachCustomKeyEventHandler((ev) => this.onKey(ev));
    this.term.open(this.element);
    this.term.textarea?.addEventListener('focus', () => link.focused(id));
    this.observer = new ResizeObserver(() => this.refit());
    this.observer.observe(this.element);
    this.catchUpTimer = setInterval(() => this.checkBacklog(), CATCH_UP_CHECK_MS);
  }

  private checkBacklog(): void {
    this.behind = this.flow.backlog > CATCH_UP_BYTES ? this.behind + 1 : 0;
    if (this.behind < 2 || this.catchingUp || !this.visible || !this.owned() || this.backgrounded) return;
    this.catchingUp = true;
    this.behind = 0;
    void this.sendBackground(true)
      .then(() => this.sendBackground(false))
      .finally(() => {
        this.catchingUp = false;
      });
  }

  /** Copy (Ctrl+Shift+C) and paste (Ctrl+Shift+V) like desktop terminals; page shortcuts pass by. */
  private onKey(ev: KeyboardEvent): boolean {
    if (this.link.isPageShortcut(ev)) return false;
    if (ev.type === 'keydown' && ev.ctrlKey && ev.shiftKey && ev.code === 'KeyC') {
      void this.copy();
      return false;
    }
    if (ev.type === 'keydown' && ev.ctrlKey && ev.shiftKey && ev.code === 'KeyV') {
      void this.pasteFromClipboard();
      return false;
    }
    return true;
  }

  async copy(): Promise<void> {
    const text = this.term.getSelection();
    if (!text) return;
    try {
      await navigator.clipboard.writeText(text);
    } catch (err) {
      this.link.report(`copy failed: ${(err as Error).message}`);
    }
  }

  async pasteFromClipboard(): Promise<void> {
    try {
      this.term.paste(await navigator.clipboard.readText());
    } catch (err) {
      this.link.report(`paste failed: ${(err as Error).message}`);
    }
  }

  /** Sends keys as if typed (the on-screen key row). */
  type(data: string): void {
    this.term.input(data, true);
  }

  focus(): void {
    this.term.focus();
  }

  // ─── Stream ──────────────────────────────────────────────────────────────

  /** Attaches (first open, or after the page's link came back) from where this view stands. */
  async attach(fresh = false): Promise<void> {
    const resume = !fresh && this.incarnationId !== undefined;
    const buf: DataFrame[] = [];
    this.attaching = buf;
    let raw: unknown;
    try {
      raw = await this.link.request('ptyrelay/attach', {
        id: this.id,
        manualAck: true,
        // A hidden pane re-attaching keeps its vote for the background (other viewers decide too).
        background: !this.visible,
        ...(resume ? { fromSeq: this.seq, expectedIncarnationId: this.incarnationId } : {}),
      });
    } catch (err) {
      this.attaching = undefined;
      throw err;
    }
    this.attaching = undefined;
    await this.settle(raw, buf, resume);
  }

  /**
   * Takes over a spawn or attach result: a reset (first view, snapshot, other process) redraws
   * from the snapshot and the replay; a continued stream just appends the replay. Frames that
   * arrived with the result are replay below its providerSequence and live after it.
   */
  async settle(raw: unknown, frames: DataFrame[], resume = false): Promise<void> {
    const r = AttachResultSchema.parse(raw);
    if (r.sessionExpired) {
      this.showExit(undefined);
      return;
    }
    const reset =
      !resume || r.providerSequence.generation === 'reset' || r.incarnationId !== this.incarnationId;
    this.incarnationId = r.incarnationId;
    if (reset) this.redraw(r.replayFromSeq ?? r.snapshot?.seq ?? r.providerSequence.value, r.snapshot);
    const liveFrom = r.providerSequence.value;
    for (const f of frames) this.data(f, f.seq < liveFrom);
    if (r.exited) this.showExit(r.exited.exitCode);
    // The relay keeps a terminal's background state; a restarted one forgot it.
    if (this.owned() && this.exited === undefined) await this.sendBackground(!this.visible, true);
    this.sentSize = '';
    this.refit();
  }

  /** A Data frame for this terminal. */
  data(f: DataFrame, replay = false): void {
    if (this.attaching) {
      this.attaching.push(f);
      return;
    }
    if (f.incarnationId !== this.incarnationId) return;
    const end = f.seq + f.data.length;
    if (end <= this.seq) return;
    const bytes = f.seq < this.seq ? f.data.subarray(this.seq - f.seq) : f.data;
    this.seq = end;
    if (this.backgrounded || this.awaitingForeground) {
      // Hidden: the tail is not drawn (the snapshot on show replaces it); it counts as consumed.
      this.flow.skip(end);
      return;
    }
    this.flow.write(bytes, end, replay);
  }

  background(e: BackgroundEvent): void {
    if (e.incarnationId !== this.incarnationId) return;
    if (e.type === 'dataGap') {
      this.seq = Math.max(this.seq, e.toSeq);
      this.flow.skip(this.seq);
    } else if (e.type === 'backgroundMarker' && !e.background) {
      this.awaitingForeground = false;
      this.redraw(e.seq, e.snapshot);
    }
  }

  /** The relay's own link to the host came back with a fresh screen, or the terminal is gone. */
  reattached(e: ReattachEvent): void {
    if (e.incarnationId !== this.incarnationId) return;
    if (e.sessionExpired) {
      this.showExit(undefined);
      return;
    }
    if (e.snapshot) this.redraw(e.snapshot.seq, e.snapshot);
  }

  exit(incarnationId: string, exitCode: number): void {
    if (incarnationId === this.incarnationId) this.showExit(exitCode);
  }

  /** The view starts over at `seq`: output still queued is dropped, the screen reset, the snapshot drawn. */
  private redraw(seq: number, snapshot?: Snapshot): void {
    this.seq = seq;
    this.flow.restart(seq);
    this.flow.writeText('\x1bc');
    if (!snapshot) return;
    if (snapshot.cols !== this.term.cols || snapshot.rows !== this.term.rows)
      this.term.resize(snapshot.cols, snapshot.rows);
    this.flow.writeText(snapshot.data, true);
    // The snapshot is drawn at the size the terminal had on its host, which may be from before
    // this pane was last resized (shown in a split, the resize not yet arrived): the view then
    // goes back to its pane's size (sent on to the host if it is not the size last sent).
    this.flow.afterParsed(() => this.refit());
  }

  private showExit(code: number | undefined): void {
    if (this.exited !== undefined) return;
    this.exited = code ?? -1;
    const what = code === undefined ? 'the terminal is gone' : `the process exited with code ${code}`;
    this.flow.writeText(`\r\n\x1b[2m[${what}]\x1b[0m\r\n`);
  }

  // ─── Visibility and size ─────────────────────────────────────────────────

  /** Shown panes are in the foreground; hidden ones in the background (keep-tail). The pane is shown or hidden at once; the promise settles once the relay knows. */
  async setVisible(visible: boolean): Promise<void> {
    if (this.visible === visible) return;
    this.visible = visible;
    this.element.hidden = !visible;
    if (visible) this.refit();
    if (this.owned() && this.incarnationId !== undefined && this.exited === undefined) {
      await this.sendBackground(!visible);
    }
  }

  private async sendBackground(background: boolean, force = false): Promise<void> {
    if (!force && background === this.backgrounded && !this.awaitingForeground) return;
    // Leaving the background: draw nothing until the marker's snapshot arrives.
    if (!background && this.backgrounded) this.awaitingForeground = true;
    this.backgrounded = background;
    try {
      await this.link.request('ptyrelay/setBackgrounded', { id: this.id, background });
    } catch (err) {
      this.awaitingForeground = false;
      this.link.report(`${this.id}: ${(err as Error).message}`);
      return;
    }
    // The relay sends the marker before its reply; none means it was not in the background
    // (a restarted relay): what was skipped meanwhile comes back with a fresh attach.
    if (this.awaitingForeground) {
      this.awaitingForeground = false;
      await this.attach(true);
    }
  }

  refit(): void {
    if (!this.visible || this.element.clientWidth === 0) return;
    try {
      this.fit.fit();
    } catch (err) {
      this.link.report(`resize failed: ${(err as Error).message}`);
      return;
    }
    clearTimeout(this.resizeTimer);
    this.resizeTimer = setTimeout(() => this.sendSize(), RESIZE_DEBOUNCE_MS);
  }

  private sendSize(): void {
    const size = `${this.term.cols}x${this.term.rows}`;
    if (
      size === this.sentSize ||
      !this.owned() ||
      this.exited !== undefined ||
      this.incarnationId === undefined
    )
      return;
    this.sentSize = size;
    this.link
      .request('ptyrelay/resize', { id: this.id, cols: this.term.cols, rows: this.term.rows })
      .catch((err: Error) => {
        this.sentSize = '';
        this.link.report(`resize of ${this.id}: ${err.message}`);
      });
  }

  /** Stops watching; the terminal keeps running on its host. */
  dispose(): void {
    clearTimeout(this.resizeTimer);
    clearInterval(this.catchUpTimer);
    this.observer.disconnect();
    this.flow.dispose();
    this.guard.dispose();
    this.term.dispose();
    this.element.remove();
  }
}
