/**
 * A session's screen model, as PtySession sees it: opens the session's model in the model worker
 * (ScreenModelHost), feeds it the output through a ModelFeeder (which holds the PTY back through
 * the producer gate when the worker lags), tells it about resizes and clears, and answers
 * snapshots and text reads once everything so far is parsed. ModelScrollback decides when the
 * model drops its scrollback and rebuilds it from the log; this class wires it to the feeder and
 * the worker. Closing releases the model.
 */
import type { AgentReadResult, ScreenSnapshot } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { TerminalPalette } from '../../provider/terminal-queries.js';
import type { ProducerGate } from '../flow/producer-gate.js';
import type { OutputHistory } from '../history/output-history.js';
import { ModelFeeder } from './model-feeder.js';
import type { ToModel } from './model-protocol.js';
import { DEFAULT_SCROLLBACK_IDLE_MS, ModelScrollback } from './model-scrollback.js';
import { mayEndWithQuery } from './query-sniffer.js';
import type { ModelRecovery, ScreenModelHost } from './screen-model.js';

export interface SessionModelOptions {
  /** The session's incarnation id (the model's `sid`). */
  sid: string;
  cols: number;
  rows: number;
  scrollbackRows: number;
  /** `SessionLimits.scrollbackIdleMs`. */
  scrollbackIdleMs?: number;
  history: OutputHistory;
  gate: ProducerGate;
  /** The session's current rows. */
  currentRows: () => number;
  /** Colours for OSC 10/11/12 answers; with `reply`, the model answers terminal queries. */
  palette?: TerminalPalette;
  /** Where the model's answers to terminal queries go (the PTY). */
  reply?: (data: string) => void;
}

export class SessionModel {
  private readonly feeder: ModelFeeder;
  /** Whether the model keeps its scrollback now (background and idle sessions drop it). */
  readonly scrollback: ModelScrollback;
  private readonly sid: string;
  /** What opens this session's model in a worker (its size follows resizes). */
  private readonly opening: Extract<ToModel, { kind: 'open' }>;
  private readonly offLost: () => void;
  /** The worker failed too often to open this model again: nothing is fed, snapshots fail. */
  private off = false;

  constructor(
    private readonly model: ScreenModelHost,
    o: SessionModelOptions,
  ) {
    const sid = o.sid;
    this.sid = sid;
    const answers = o.reply && o.palette ? { palette: o.palette } : {};
    this.opening = {
      kind: 'open',
      sid,
      cols: o.cols,
      rows: o.rows,
      scrollback: o.scrollbackRows,
      ...answers,
    };
    model.post(this.opening);
    if (o.reply) model.onReply(sid, o.reply);
    this.feeder = new ModelFeeder(
      {
        // postMessage copies (structured clone) what the feeder does not own; what it owns moves.
        post: (seq, data, owned) =>
          this.send({ kind: 'data', sid, seq, data }, owned ? [data.buffer as ArrayBuffer] : undefined),
        backpressure: (on) => (on ? o.gate.hold('model') : o.gate.release('model')),
      },
      o.scrollbackRows + o.rows,
    );
    model.onProgress(sid, (seq) => this.feeder.progress(seq));
    const retained = () => o.scrollbackRows + o.currentRows();
    this.scrollback = new ModelScrollback(
      {
        sid,
        history: o.history,
        post: (m) => this.send(m),
        flushModel: () => this.feeder.flushAll(),
        retainLines: (shrunk) => this.feeder.setRetainedLines(shrunk ? o.currentRows() : retained()),
      },
      o.cols,
      o.rows,
      o.scrollbackIdleMs ?? DEFAULT_SCROLLBACK_IDLE_MS,
      retained,
    );
    model.onGrown(sid, (adopted) => this.scrollback.rebuilt(adopted));
    this.offLost = model.onLost((_why, recovery) => this.restart(recovery));
  }

  /**
   * The worker was lost with this session's model: it opens again in the next worker and is
   * rebuilt from the session's log (what was in flight is in the log too), or shows the output
   * from now on, or stays closed (see ModelRecovery).
   */
  private restart(recovery: ModelRecovery): void {
    this.feeder.restart();
    if (recovery === 'none') {
      this.off = true;
      return;
    }
    this.model.post(this.opening);
    if (recovery !== 'rebuild') return;
    this.scrollback.restart().catch(() => {
      // A failed rebuild leaves the model with the output from now on; a snapshot tries again.
    });
  }

  /** New output at `seq` (already in the history). */
  push(seq: number, data: Uint8Array): void {
    if (this.off) return;
    this.feeder.push(seq, data);
    // A program that asked the terminal something waits for the answer: parse up to it now.
    if (mayEndWithQuery(data)) this.feeder.flushAll();
  }

  /** The PTY was resized at output position `head`. */
  resize(head: number, cols: number, rows: number): void {
    this.opening.cols = cols;
    this.opening.rows = rows;
    this.feeder.flushAll();
    this.send({ kind: 'resize', sid: this.sid, cols, rows });
    this.scrollback.events.resize(head, cols, rows);
  }

  /** The model's screen and scrollback; a model that dropped its scrollback rebuilds it from the log first. */
  snapshot(scrollbackRows?: number): Promise<ScreenSnapshot> {
    return this.afterRebuild(() => this.model.snapshot(this.sid, scrollbackRows));
  }

  /** A page of the model's text (agent reads); everything output so far is parsed first. */
  text(offset: number, count: number, maxBytes: number): Promise<AgentReadResult> {
    return this.afterRebuild(() => this.model.text(this.sid, offset, count, maxBytes));
  }

  /** To the worker, unless this model is off (a post would start a worker for nothing). */
  private send(m: ToModel, transfer?: ArrayBuffer[]): void {
    if (!this.off) this.model.post(m, transfer);
  }

  private checkOn(): void {
    if (this.off)
      throw new PtyRelayError(
        'PROTOCOL_ERROR',
        `the screen model of ${this.sid} is off: its worker failed too often`,
      );
  }

  /** `ask` once the model has everything; asked again once when the worker was lost meanwhile. */
  private async afterRebuild<T>(ask: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      this.checkOn();
      const losses = this.model.losses;
      try {
        await this.scrollback.full();
        this.feeder.flushAll();
        return await ask();
      } catch (err) {
        if (attempt > 0 || this.model.losses === losses) throw err;
      }
    }
  }

  /** The model's screen as far as it has parsed (see PtySession.snapshotAsParsed). */
  async snapshotAsParsed(scrollbackRows?: number): Promise<ScreenSnapshot> {
    this.checkOn();
    return this.model.snapshot(this.sid, scrollbackRows);
  }

  /** The buffer was cleared at output position `head`. */
  clear(head: number): void {
    this.feeder.flushAll();
    this.send({ kind: 'clear', sid: this.sid });
    this.scrollback.events.clear(head);
  }

  /** Releases the model in the worker. */
  dispose(): void {
    this.offLost();
    this.feeder.dispose();
    this.model.onProgress(this.sid, undefined);
    this.model.onGrown(this.sid, undefined);
    this.model.onReply(this.sid, undefined);
    this.send({ kind: 'close', sid: this.sid });
  }
}
