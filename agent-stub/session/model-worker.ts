import { parentPort } from 'node:worker_threads';
import { SerializeAddon } from '@xterm/addon-serialize';
import xtermHeadless from '@xterm/headless';
import type { FromModel, ToModel } from './model-protocol.js';

const { Terminal } = xtermHeadless;

/** Progress is reported at most this often (bytes) so the session can bound the model's backlog. */
const PROGRESS_EVERY_BYTES = 256 * 1024;

interface ModelEntry {
  term: InstanceType<typeof Terminal>;
  serializer: SerializeAddon;
  /** Seq after the last write handed to the terminal. */
  queuedSeq: number;
  /** Seq after the last write the terminal finished parsing. */
  parsedSeq: number;
  lastReported: number;
}

/**
 * Worker-thread side of the screen model: one @xterm/headless terminal per session. Runs off
 * the PTY reader's thread so a slow parse never delays delivery. The terminal's own replies to
 * queries (DA, CPR…) are never listened to, so they cannot reach the PTY.
 */
export function runModelWorker(): void {
  const port = parentPort;
  if (!port) throw new Error('model worker started outside a worker thread');
  const models = new Map<string, ModelEntry>();
  const send = (m: FromModel) => port.postMessage(m);

  port.on('message', (m: ToModel) => {
    if (m.kind === 'open') {
      const term = new Terminal({
        cols: m.cols,
        rows: m.rows,
        scrollback: m.scrollback,
        allowProposedApi: true,
      });
      const serializer = new SerializeAddon();
      term.loadAddon(serializer);
      models.set(m.sid, { term, serializer, queuedSeq: 0, parsedSeq: 0, lastReported: 0 });
      return;
    }
    const e = models.get(m.sid);
    if (!e) return;
    switch (m.kind) {
      case 'data': {
        const end = m.seq + m.data.length;
        e.queuedSeq = end;
        e.term.write(m.data, () => {
          e.parsedSeq = end;
          // Skipped output makes seq jump: parsed state is "everything up to end".
          if (end - e.lastReported >= PROGRESS_EVERY_BYTES || end === e.queuedSeq) {
            e.lastReported = end;
            send({ kind: 'progress', sid: m.sid, seq: end });
          }
        });
        break;
      }
      // Resize and clear queue behind pending writes so they apply at the right point of the stream.
      case 'resize':
        e.term.write('', () => e.term.resize(m.cols, m.rows));
        break;
      case 'clear':
        e.term.write('', () => e.term.clear());
        break;
      case 'snapshot':
        // An empty write queues behind every earlier write, so the callback sees all of them parsed.
        e.term.write('', () => {
          const data = e.serializer.serialize(
            m.scrollbackRows === undefined ? {} : { scrollback: Math.max(0, m.scrollbackRows) },
          );
          send({
            kind: 'snapshot',
            sid: m.sid,
            req: m.req,
            snapshot: {
              data,
              cols: e.term.cols,
              rows: e.term.rows,
              seq: e.parsedSeq,
              alternateScreen: e.term.buffer.active.type === 'alternate',
            },
          });
        });
        break;
      case 'close':
        e.term.dispose();
        models.delete(m.sid);
        break;
    }
  });
}
