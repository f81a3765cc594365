import { parentPort } from 'node:worker_threads';
import { collectGarbageSoon } from './idle-gc.js';
import type { FromModel, ToModel } from './model-protocol.js';
import { rebuildModel, sameScreen } from './model-rebuild.js';
import { pageLines } from './read-page.js';
import { TerminalModel } from './terminal-model.js';

/** Progress is reported at most this often (bytes) so the session can bound the model's backlog. */
const PROGRESS_EVERY_BYTES = 256 * 1024;

interface ModelEntry {
  model: TerminalModel;
  scrollback: number;
  /** Seq after the last write handed to the model. */
  queuedSeq: number;
  /** Seq after the last write the model finished parsing. */
  parsedSeq: number;
  lastReported: number;
  /** Messages that arrived while the model is being rebuilt; they apply to whichever model wins. */
  held?: ToModel[];
  /** The model being rebuilt. */
  rebuilding?: TerminalModel;
  /** Makes a model answer the terminal queries in live output (the live one, and a rebuilt one once adopted). */
  answer?: (model: TerminalModel) => void;
}

/**
 * Worker-thread side of the screen model: one TerminalModel per session. Runs off the PTY
 * reader's thread so a slow parse never delays delivery. A live model answers the terminal
 * queries in the output (TerminalModel.answerQueries); a model rebuilt from the log does not.
 */
export function runModelWorker(): void {
  const port = parentPort;
  if (!port) throw new Error('model worker started outside a worker thread');
  const worker = new ModelWorker((m) => port.postMessage(m));
  port.on('message', (m: ToModel) => worker.handle(m));
}

/** The models of one worker thread, by session id, and what is done to them in message order. */
class ModelWorker {
  private readonly models = new Map<string, ModelEntry>();

  constructor(private readonly send: (m: FromModel) => void) {}

  handle(m: ToModel): void {
    if (m.kind === 'open') {
      const model = new TerminalModel(m.cols, m.rows, m.scrollback);
      const sid = m.sid;
      const palette = m.palette;
      const answer = palette
        ? (t: TerminalModel) => t.answerQueries((data) => this.send({ kind: 'reply', sid, data }), palette)
        : undefined;
      answer?.(model);
      this.models.set(sid, {
        model,
        scrollback: m.scrollback,
        queuedSeq: 0,
        parsedSeq: 0,
        lastReported: 0,
        answer,
      });
      return;
    }
    const e = this.models.get(m.sid);
    if (!e) {
      // Every request gets an answer, or its caller would wait for the timeout.
      if (m.kind === 'snapshot' || m.kind === 'text') this.send({ kind: 'gone', sid: m.sid, req: m.req });
      return;
    }
    if (e.held && m.kind !== 'close') {
      e.held.push(m);
      return;
    }
    this.apply(e, m);
  }

  private apply(e: ModelEntry, m: Exclude<ToModel, { kind: 'open' }>): void {
    switch (m.kind) {
      case 'data':
        this.write(e, m.sid, m.seq, m.data);
        break;
      // Every operation queues behind earlier ones, so it applies at the right point of the stream.
      case 'resize':
        e.model.resize(m.cols, m.rows);
        break;
      case 'clear':
        e.model.clear();
        break;
      case 'shrink':
        e.model.shrink();
        collectGarbageSoon();
        break;
      case 'unshrink':
        e.model.unshrink();
        break;
      case 'grow':
        this.grow(m.sid, e, m);
        break;
      case 'snapshot':
        e.model.snapshot(m.scrollbackRows, (s) =>
          this.send({ kind: 'snapshot', sid: m.sid, req: m.req, snapshot: { ...s, seq: e.parsedSeq } }),
        );
        break;
      case 'text':
        e.model.plainLines((lines) =>
          this.send({
            kind: 'text',
            sid: m.sid,
            req: m.req,
            page: pageLines(lines, m.offset, m.count, m.maxBytes),
          }),
        );
        break;
      case 'close':
        this.close(m.sid, e);
        break;
    }
  }

  private write(e: ModelEntry, sid: string, seq: number, data: Uint8Array): void {
    const end = seq + data.length;
    e.queuedSeq = end;
    e.model.write(data, () => {
      // Skipped output makes seq jump: parsed state is "everything up to end".
      e.parsedSeq = end;
      if (end - e.lastReported >= PROGRESS_EVERY_BYTES || end === e.queuedSeq) {
        e.lastReported = end;
        this.send({ kind: 'progress', sid, seq: end });
      }
    });
  }

  private close(sid: string, e: ModelEntry): void {
    // Requests already made (a save at exit asks for the last screen) are answered first:
    // what waited for a rebuild goes to the live model, which closes after its queue.
    e.rebuilding?.dispose();
    e.rebuilding = undefined;
    this.release(e);
    this.models.delete(sid);
    // Its screen and scrollback are garbage once it closed: a worker whose last model went
    // allocates nothing that would make V8 collect them.
    e.model.close(collectGarbageSoon);
  }

  /** Applies the messages that waited for a rebuild, to whichever model it left in place. */
  private release(e: ModelEntry): void {
    const held = e.held ?? [];
    e.held = undefined;
    for (const h of held) this.handle(h);
  }

  /**
   * Rebuilds a shrunk model from the steps (the log up to everything posted so far) and adopts the
   * rebuilt one when its screen equals the live one's, or always with `force` (a model restarted
   * empty after the worker was lost: the rebuild is all it has, and its position is `upTo`);
   * otherwise (the log lost the stream's start and the state there mattered) the live screen
   * stays, keeping scrollback from now on. Messages arriving meanwhile wait and then apply to the
   * model kept.
   */
  private grow(sid: string, e: ModelEntry, m: Extract<ToModel, { kind: 'grow' }>): void {
    e.held = [];
    const live = e.model;
    const fresh: TerminalModel = rebuildModel(m.steps, e.scrollback, () =>
      live.snapshot(0, (a) =>
        fresh.snapshot(0, (b) => {
          e.rebuilding = undefined;
          const adopted = m.force === true || sameScreen(a, b);
          if (adopted) {
            live.dispose();
            e.answer?.(fresh);
            e.model = fresh;
            e.parsedSeq = Math.max(e.parsedSeq, m.upTo);
            e.queuedSeq = Math.max(e.queuedSeq, m.upTo);
          } else {
            fresh.dispose();
            live.unshrink();
          }
          this.send({ kind: 'grown', sid, adopted });
          collectGarbageSoon();
          this.release(e);
        }),
      ),
    );
    e.rebuilding = fresh;
  }
}
