import type { ScreenSnapshot } from '../../provider/contract.js';
import { readCwd } from '../session/proc-info.js';
import type { PtySession } from '../session/pty-session.js';
import { RESTORE_RECORD_VERSION, type RestoreRecord } from './restore-record.js';
import type { RestoreStore } from './restore-store.js';

/** A changed session's record is rewritten this often ("every few seconds while it changes"). */
export const RESTORE_SAVE_INTERVAL_MS = 2000;
/**
 * While output keeps streaming, a session is saved at most this often, from the screen as the
 * model has parsed it so far: a full snapshot would make the model parse a flood it otherwise
 * skips in part (model-feeder.ts), and twenty flooding sessions made that visible.
 */
export const RESTORE_STREAMING_SAVE_INTERVAL_MS = 30_000;
/** Scrollback rows kept above the screen in a record: enough to see what led up to the end. */
export const RESTORE_SCROLLBACK_ROWS = 2000;
/** Upper bound of one record file; a larger one is retaken with a quarter of the rows. */
export const RESTORE_MAX_RECORD_BYTES = 1024 * 1024;

type Log = (msg: string, extra?: Record<string, unknown>) => void;

export interface RestorePersisterOptions {
  store: RestoreStore;
  scope: string;
  /** processIdentity of this daemon. */
  owner: string;
  sessions: () => Iterable<PtySession>;
  log: Log;
  intervalMs?: number;
  scrollbackRows?: number;
  maxRecordBytes?: number;
}

/**
 * Keeps each live session's cold-restore record current: rewritten every interval while the
 * session changes (output, size) and once more at exit; removed when the session is forgotten on
 * purpose (shutdown) — a process killed with its host leaves its last record behind.
 */
export class RestorePersister {
  /** What a session looked like at its last save (seq, size, exit), to skip unchanged ones. */
  private readonly savedKey = new Map<string, string>();
  /** The save or removal in flight per session id; the next one runs after it. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly forgotten = new Set<string>();
  private readonly queued = new Set<string>();
  /** Ring head at the previous tick and time of the last save started, per session id. */
  private readonly lastHead = new Map<string, number>();
  private readonly lastSaveAt = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly opts: RestorePersisterOptions) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.opts.intervalMs ?? RESTORE_SAVE_INTERVAL_MS);
    this.timer.unref();
  }

  /** A new session: saved at once when it exits, otherwise by the periodic tick. */
  track(s: PtySession): void {
    this.forgotten.delete(s.id);
    s.onExited(() => this.save(s));
  }

  /**
   * The session was shut down cleanly: its record goes at once, not after a save in flight (whose
   * snapshot can take seconds on a busy model worker; a reboot meanwhile would restore a terminal
   * that was ended on purpose), and again after that save, which may have been renaming its file.
   */
  forget(id: string): Promise<void> {
    this.forgotten.add(id);
    this.savedKey.delete(id);
    this.lastHead.delete(id);
    this.lastSaveAt.delete(id);
    const remove = () => this.opts.store.remove(this.opts.scope, id);
    const now = this.chains.has(id) ? remove() : Promise.resolve();
    return Promise.all([now, this.enqueue(id, remove)]).then(() => undefined);
  }

  /** Saves every changed session now (tests, and before a daemon exits). */
  async flush(): Promise<void> {
    for (const s of this.opts.sessions()) this.save(s);
    await this.settle();
  }

  /** Waits for the saves and removals in flight. */
  async settle(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()]);
  }

  /** No more saves; waits for those in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.settle();
  }

  private tick(now = Date.now()): void {
    for (const s of this.opts.sessions()) {
      if (!s.alive) continue;
      const before = this.lastHead.get(s.id);
      this.lastHead.set(s.id, s.ring.head);
      // First sight: only note where the output stands, so a flood that starts with the session
      // is recognised as streaming before it is ever saved.
      if (before === undefined) continue;
      const streaming = before !== s.ring.head;
      // Output still flowing: save now and then; the save after it settles catches the end.
      if (streaming && now - (this.lastSaveAt.get(s.id) ?? 0) < RESTORE_STREAMING_SAVE_INTERVAL_MS) continue;
      this.save(s, streaming);
    }
  }

  private keyOf(s: PtySession): string {
    return `${s.incarnationId}:${s.ring.head}:${s.cols}x${s.rows}:${s.title}:${s.exited ? 'x' : ''}`;
  }

  private save(s: PtySession, streaming = false): void {
    if (this.stopped || this.forgotten.has(s.id) || this.queued.has(s.id)) return;
    // A session that has shown nothing yet has nothing to restore.
    if (s.ring.head === 0 && s.alive) return;
    if (!this.chains.has(s.id) && this.savedKey.get(s.id) === this.keyOf(s)) return;
    // One save waits at most behind the one in flight; it reads the session's state when it runs.
    this.queued.add(s.id);
    this.lastSaveAt.set(s.id, Date.now());
    void this.enqueue(s.id, async () => {
      this.queued.delete(s.id);
      const key = this.keyOf(s);
      if (this.forgotten.has(s.id) || this.savedKey.get(s.id) === key) return;
      const text = await this.recordText(s, streaming);
      if (this.forgotten.has(s.id)) return;
      if (text === undefined) {
        this.opts.log('cold-restore record too large; not saved', { id: s.id });
        return;
      }
      await this.opts.store.write(this.opts.scope, s.id, text);
      this.savedKey.set(s.id, key);
    }).catch((err: Error) => {
      // The next tick tries again (nothing was recorded as saved).
      this.opts.log('cold-restore save failed', { id: s.id, err: err.message });
    });
  }

  /** The record as JSON, with fewer scrollback rows until it fits the size bound. */
  private async recordText(s: PtySession, streaming: boolean): Promise<string | undefined> {
    const max = this.opts.maxRecordBytes ?? RESTORE_MAX_RECORD_BYTES;
    let rows = this.opts.scrollbackRows ?? RESTORE_SCROLLBACK_ROWS;
    for (;;) {
      const snap = streaming ? await s.snapshotAsParsed(rows) : await s.snapshot(rows);
      const text = JSON.stringify(this.record(s, snap, rows));
      if (Buffer.byteLength(text) <= max) return text;
      if (rows === 0) return undefined;
      rows = Math.floor(rows / 4);
    }
  }

  private record(s: PtySession, snap: ScreenSnapshot, rows: number): RestoreRecord {
    const cwd = (s.alive ? readCwd(s.pid) : undefined) ?? s.cwd;
    return {
      v: RESTORE_RECORD_VERSION,
      scope: this.opts.scope,
      owner: this.opts.owner,
      id: s.id,
      incarnationId: s.incarnationId,
      command: s.command,
      args: [...s.args],
      ...(s.name !== undefined ? { name: s.name } : {}),
      ...(s.alias !== undefined ? { alias: s.alias } : {}),
      ...(cwd !== undefined ? { cwd } : {}),
      title: s.title,
      cols: snap.cols,
      rows: snap.rows,
      screen: snap.data,
      scrollbackRows: rows,
      seq: snap.seq,
      alternateScreen: snap.alternateScreen,
      ...(s.exited ? { exited: s.exited } : {}),
      createdAt: s.createdAt,
      savedAt: Date.now(),
    };
  }

  private enqueue(id: string, job: () => Promise<void>): Promise<void> {
    const prev = this.chains.get(id) ?? Promise.resolve();
    const next = prev.then(job, job);
    // The chain's entry only marks the job done and never rejects: the job's outcome reaches its
    // caller through `next` (a rejected entry nobody awaits would be an unhandled rejection, which
    // ends the daemon and every session in it).
    const done = () => {
      if (this.chains.get(id) === tracked) this.chains.delete(id);
    };
    const tracked: Promise<void> = next.then(done, done);
    this.chains.set(id, tracked);
    return next;
  }
}
