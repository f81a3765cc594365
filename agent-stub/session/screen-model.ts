import { Worker } from 'node:worker_threads';
import type { ScreenSnapshot } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { type FromModel, MODEL_WORKER_MARKER, type ToModel } from './model-protocol.js';

/** How long a snapshot may take before the caller gets TIMEOUT (a 10,000-row scrollback takes ~100 ms). */
const SNAPSHOT_TIMEOUT_MS = 15_000;
/**
 * The model allocates fast and keeps little: V8's default young generation (tens of MB) would
 * mostly hold garbage. A small one is collected more often and keeps the daemon's RSS down.
 */
const MODEL_YOUNG_GENERATION_MB = 8;

/**
 * Owns the one worker thread that runs every session's headless terminal. The worker is this
 * same bundle file (process.argv[1]) started with a marker in workerData.
 */
export class ScreenModelHost {
  private worker: Worker | undefined;
  private nextReq = 1;
  private readonly pending = new Map<
    number,
    { resolve: (s: ScreenSnapshot) => void; reject: (e: Error) => void }
  >();
  private readonly progress = new Map<string, (seq: number) => void>();

  constructor(private readonly entryFile: string = process.argv[1]) {}

  post(m: ToModel): void {
    this.ensureWorker().postMessage(m);
  }

  onProgress(sid: string, cb: ((seq: number) => void) | undefined): void {
    if (cb) this.progress.set(sid, cb);
    else this.progress.delete(sid);
  }

  snapshot(sid: string, scrollbackRows?: number): Promise<ScreenSnapshot> {
    const req = this.nextReq++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(req);
        reject(new PtyRelayError('TIMEOUT', `snapshot of ${sid} took longer than ${SNAPSHOT_TIMEOUT_MS} ms`));
      }, SNAPSHOT_TIMEOUT_MS);
      this.pending.set(req, {
        resolve: (s) => {
          clearTimeout(timer);
          resolve(s);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.post({ kind: 'snapshot', sid, req, scrollbackRows });
    });
  }

  async dispose(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(this.entryFile, {
      workerData: { role: MODEL_WORKER_MARKER },
      resourceLimits: { maxYoungGenerationSizeMb: MODEL_YOUNG_GENERATION_MB },
    });
    w.unref();
    w.on('message', (m: FromModel) => {
      if (m.kind === 'progress') this.progress.get(m.sid)?.(m.seq);
      else if (m.kind === 'snapshot') {
        const p = this.pending.get(m.req);
        this.pending.delete(m.req);
        p?.resolve(m.snapshot);
      }
    });
    w.on('error', (err) => {
      for (const p of this.pending.values())
        p.reject(new PtyRelayError('PROTOCOL_ERROR', `screen model failed: ${err}`));
      this.pending.clear();
      this.worker = undefined;
    });
    this.worker = w;
    return w;
  }
}
