import { Worker } from 'node:worker_threads';
import type { AgentReadResult, ScreenSnapshot } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { heapTrimAddonPath, trimHeapSoon } from '../native/heap-trim.js';
import type { FromModel, ModelWorkerData, ToModel } from './model-protocol.js';
import { bundledModelWorker, type ModelWorkerCode } from './model-worker-code.js';

/** How long a snapshot may take before the caller gets TIMEOUT (a 10,000-row scrollback takes ~100 ms). */
const SNAPSHOT_TIMEOUT_MS = 15_000;
/**
 * The model allocates fast and keeps little: V8's default young generation (tens of MB) would
 * mostly hold garbage. A small one is collected more often and keeps the daemon's RSS down.
 */
const MODEL_YOUNG_GENERATION_MB = 8;
/**
 * Losses of the worker within LOSS_WINDOW_MS after which the models are no longer rebuilt from
 * their logs (output that makes the worker fail would make every rebuild fail again), and after
 * which they are not opened again at all (a worker that cannot start would be started in a loop).
 */
const MAX_REBUILDING_LOSSES = 3;
const MAX_REOPENING_LOSSES = 10;
const LOSS_WINDOW_MS = 60_000;
/**
 * How long the worker stays once no model is open. A terminal opened meanwhile uses it; after
 * that it ends and gives its memory back (about 20 MB of the daemon's RSS: its heap, its arena,
 * its copy of the model's code), and the next terminal starts a new one, as the first did.
 */
export const WORKER_IDLE_MS = 3000;

/**
 * What the sessions do after the worker was lost: rebuild their models from their logs, open them
 * empty (the worker failed too often for rebuilds), or nothing (it failed too often to restart:
 * their snapshots fail as closed models' do, and no worker starts but for a later message).
 */
export type ModelRecovery = 'rebuild' | 'empty' | 'none';

/**
 * Owns the one worker thread that runs every session's headless terminal. The worker runs its
 * own bundle (model-worker-entry.ts): the daemon's modules stay out of its heap.
 */
export class ScreenModelHost {
  private worker: Worker | undefined;
  private nextReq = 1;
  private readonly pending = new Map<number, { resolve: (v: never) => void; reject: (e: Error) => void }>();
  private readonly progress = new Map<string, (seq: number) => void>();
  private readonly grown = new Map<string, (adopted: boolean) => void>();
  private readonly replies = new Map<string, (data: string) => void>();
  private readonly lostListeners = new Set<(why: string, recovery: ModelRecovery) => void>();
  /** Times the worker ended without being asked to (an uncaught error, its heap exhausted). */
  losses = 0;
  private lossTimes: number[] = [];
  /** Sessions whose model is open (between their `open` and `close`). */
  private readonly open = new Set<string>();
  private idleTimer: NodeJS.Timeout | undefined;

  /** `code`: by default the source the stub bundle carries; tests start the worker's file. */
  constructor(private readonly code?: ModelWorkerCode) {}

  /** `transfer`: buffers of `m` that move to the worker (the sender must not use them again). */
  post(m: ToModel, transfer?: ArrayBuffer[]): void {
    if (m.kind === 'open') {
      this.open.add(m.sid);
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    } else if (m.kind === 'close') this.open.delete(m.sid);
    this.ensureWorker().postMessage(m, transfer);
    if (this.open.size === 0) this.armIdleEnd();
  }

  /** Whether the worker runs now (tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  onProgress(sid: string, cb: ((seq: number) => void) | undefined): void {
    if (cb) this.progress.set(sid, cb);
    else this.progress.delete(sid);
  }

  /** `cb` gets the model's answers to terminal queries in `sid`'s output. */
  onReply(sid: string, cb: ((data: string) => void) | undefined): void {
    if (cb) this.replies.set(sid, cb);
    else this.replies.delete(sid);
  }

  /** `cb` learns whether each rebuild of `sid` (`grow`) was adopted. */
  onGrown(sid: string, cb: ((adopted: boolean) => void) | undefined): void {
    if (cb) this.grown.set(sid, cb);
    else this.grown.delete(sid);
  }

  snapshot(sid: string, scrollbackRows?: number): Promise<ScreenSnapshot> {
    return this.request('snapshot', sid, (req) => ({ kind: 'snapshot', sid, req, scrollbackRows }));
  }

  /** A page of the session's text as plain lines (see read-page.ts). */
  text(sid: string, offset: number, count: number, maxBytes: number): Promise<AgentReadResult> {
    return this.request('text', sid, (req) => ({ kind: 'text', sid, req, offset, count, maxBytes }));
  }

  private request<T>(what: string, sid: string, make: (req: number) => ToModel): Promise<T> {
    const req = this.nextReq++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(req);
        reject(new PtyRelayError('TIMEOUT', `${what} of ${sid} took longer than ${SNAPSHOT_TIMEOUT_MS} ms`));
      }, SNAPSHOT_TIMEOUT_MS);
      this.pending.set(req, {
        resolve: (v: T) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.post(make(req));
    });
  }

  /**
   * `cb` runs when the worker ended without being asked to: every model in it is gone, and a new
   * worker starts with the next message. `recovery` says what the sessions do (see
   * {@link ModelRecovery}). Returns the unsubscribe.
   */
  onLost(cb: (why: string, recovery: ModelRecovery) => void): () => void {
    this.lostListeners.add(cb);
    return () => this.lostListeners.delete(cb);
  }

  async dispose(): Promise<void> {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  /** Ends the worker the way a crash would (tests of the recovery; nothing else calls it). */
  async crashForTest(): Promise<void> {
    await this.worker?.terminate();
  }

  private armIdleEnd(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.endIdle(), WORKER_IDLE_MS);
    this.idleTimer.unref();
  }

  /** No model opened since the last one closed: the worker ends, once it answered every request. */
  private endIdle(): void {
    this.idleTimer = undefined;
    const w = this.worker;
    if (!w || this.open.size > 0) return;
    if (this.pending.size > 0) {
      this.armIdleEnd();
      return;
    }
    this.worker = undefined;
    void w.terminate().then(() => trimHeapSoon());
  }

  private lost(w: Worker, why: string): void {
    if (this.worker !== w) return;
    this.worker = undefined;
    this.losses++;
    for (const p of this.pending.values())
      p.reject(new PtyRelayError('PROTOCOL_ERROR', `screen model failed: ${why}`));
    this.pending.clear();
    const now = Date.now();
    this.lossTimes = [...this.lossTimes.filter((t) => now - t < LOSS_WINDOW_MS), now];
    const n = this.lossTimes.length;
    const recovery: ModelRecovery =
      n <= MAX_REBUILDING_LOSSES ? 'rebuild' : n <= MAX_REOPENING_LOSSES ? 'empty' : 'none';
    for (const cb of [...this.lostListeners]) cb(why, recovery);
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const workerData: ModelWorkerData = { heapTrimPath: heapTrimAddonPath() };
    const code = this.code ?? bundledModelWorker();
    const w = new Worker('source' in code ? code.source : code.file, {
      eval: 'source' in code,
      workerData,
      resourceLimits: { maxYoungGenerationSizeMb: MODEL_YOUNG_GENERATION_MB },
    });
    w.unref();
    w.on('message', (m: FromModel) => {
      if (m.kind === 'progress') this.progress.get(m.sid)?.(m.seq);
      else if (m.kind === 'grown') this.grown.get(m.sid)?.(m.adopted);
      else if (m.kind === 'reply') this.replies.get(m.sid)?.(m.data);
      else if (m.kind === 'gone') {
        const p = this.pending.get(m.req);
        this.pending.delete(m.req);
        p?.reject(new PtyRelayError('SESSION_EXITED', `the screen model of ${m.sid} is closed`));
      } else {
        const p = this.pending.get(m.req);
        this.pending.delete(m.req);
        p?.resolve((m.kind === 'snapshot' ? m.snapshot : m.page) as never);
      }
    });
    // An error ends the worker (its 'exit' follows); either way its models are gone.
    w.on('error', (err) => this.lost(w, String(err)));
    w.on('exit', (code) => this.lost(w, `the worker exited with code ${code}`));
    this.worker = w;
    return w;
  }
}
