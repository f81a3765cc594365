import { parentPort } from 'node:worker_threads';
import { pageLines } from '../readiness/read-page.js';
import type { FromModel, ToModel } from './model-protocol.js';
import { TerminalModel } from './terminal-model.js';

/** Progress is reported at most this often (bytes) so the session can bound the model's backlog. */
const PROGRESS_EVERY_BYTES = 256 * 1024;

interface ModelEntry {
  model: TerminalModel;
  /** Seq after the last write handed to the model. */
  queuedSeq: number;
  /** Seq after the last write the model finished parsing. */
  parsedSeq: number;
  lastReported: number;
}

/**
 * Worker-thread side of the screen model: one TerminalModel per session. Runs off the PTY
 * reader's thread so a slow parse never delays delivery. The emulator's own replies to queries
 * (DA, CPR…) are never listened to, so they cannot reach the PTY.
 */
export function runModelWorker(): void {
  const port = parentPort;
  if (!port) throw new Error('model worker started outside a worker thread');
  const models = new Map<string, ModelEntry>();
  const send = (m: FromModel) => port.postMessage(m);

  port.on('message', (m: ToModel) => {
    if (m.kind === 'open') {
      const model = new TerminalModel(m.cols, m.rows, m.scrollback);
      models.set(m.sid, { model, queuedSeq: 0, parsedSeq: 0, lastReported: 0 });
      return;
    }
    const e = models.get(m.sid);
    if (!e) return;
    switch (m.kind) {
      case 'data': {
        const end = m.seq + m.data.length;
        e.queuedSeq = end;
        e.model.write(m.data, () => {
          // Skipped output makes seq jump: parsed state is "everything up to end".
          e.parsedSeq = end;
          if (end - e.lastReported >= PROGRESS_EVERY_BYTES || end === e.queuedSeq) {
            e.lastReported = end;
            send({ kind: 'progress', sid: m.sid, seq: end });
          }
        });
        break;
      }
      // Every operation queues behind earlier ones, so it applies at the right point of the stream.
      case 'resize':
        e.model.resize(m.cols, m.rows);
        break;
      case 'clear':
        e.model.clear();
        break;
      case 'snapshot':
        e.model.snapshot(m.scrollbackRows, (s) =>
          send({ kind: 'snapshot', sid: m.sid, req: m.req, snapshot: { ...s, seq: e.parsedSeq } }),
        );
        break;
      case 'text':
        e.model.plainLines((lines) =>
          send({
            kind: 'text',
            sid: m.sid,
            req: m.req,
            page: pageLines(lines, m.offset, m.count, m.maxBytes),
          }),
        );
        break;
      case 'close':
        e.model.dispose();
        models.delete(m.sid);
        break;
    }
  });
}
