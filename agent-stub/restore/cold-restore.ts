import type { ColdRestore, PtyExitInfo, PtyProcessInfo } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { StubAttachResult } from '../../provider/wire/messages.js';
import { deadSessionLogDir, removeDeadSessionLog } from '../history/history-store.js';
import type { PtySession } from '../session/pty-session.js';
import { screenFromLog } from './log-scrollback.js';
import { identityAlive, processIdentity } from './process-identity.js';
import { RestorePersister } from './restore-persister.js';
import type { RestoreRecord } from './restore-record.js';
import { RestoreStore, restoreScope } from './restore-store.js';
import { RestoredSessions } from './restored-sessions.js';

/**
 * Exit reported for a session whose process died with its host and left no exit record: the
 * kernel's SIGKILL at shutdown (a daemon stopped by SIGTERM records the same after killing it).
 */
export const LOST_WITH_HOST: PtyExitInfo = { exitCode: 137, signal: 'SIGKILL' };

type Log = (msg: string, extra?: Record<string, unknown>) => void;

export interface ColdRestoreOptions {
  stateDir: string;
  runtimeDir: string;
  sessions: () => Iterable<PtySession>;
  log: Log;
  /** Save interval (ms); tests shorten it. */
  intervalMs?: number;
}

/** The contract's view of a record. */
export function coldRestoreOf(r: RestoreRecord): ColdRestore {
  return {
    scrollback: r.screen,
    ...(r.cwd !== undefined ? { cwd: r.cwd } : {}),
    cols: r.cols,
    rows: r.rows,
    lastTitle: r.title,
    command: r.command,
    savedAt: r.savedAt,
    ...(r.exited ? { exited: r.exited } : {}),
  };
}

/**
 * Cold restore in the daemon: persists live sessions (RestorePersister) and reports the sessions
 * an earlier daemon of this scope lost (RestoredSessions) as `sessionExpired` + `coldRestore`.
 */
export class ColdRestoreService {
  /** Settles once the restored sessions' logs were read into their records (restoreFromLogs). */
  private logsRead: Promise<void> = Promise.resolve();

  private constructor(
    private readonly persister: RestorePersister,
    private readonly restored: RestoredSessions,
    private readonly stateDir: string,
    private readonly log: Log,
  ) {}

  /** Opens the restore dir under `stateDir`; undefined (logged) when it cannot be used. */
  static open(opts: ColdRestoreOptions): ColdRestoreService | undefined {
    const store = new RestoreStore(opts.stateDir);
    const owner = processIdentity(process.pid) ?? `${process.pid}:`;
    const scope = restoreScope(opts.runtimeDir);
    const restored = new RestoredSessions(store, scope, opts.log);
    try {
      store.ensureDir();
      restored.load((o) => o !== owner && identityAlive(o));
    } catch (err) {
      opts.log('cold restore disabled: state dir unusable', { dir: store.dir, err: (err as Error).message });
      return undefined;
    }
    const persister = new RestorePersister({
      store,
      scope,
      owner,
      sessions: opts.sessions,
      log: opts.log,
      intervalMs: opts.intervalMs,
    });
    persister.start();
    return new ColdRestoreService(persister, restored, opts.stateDir, opts.log);
  }

  /** True while a record of a dead session still needs that session's output log (history-store.ts). */
  needsLog(owner: string, id: string): boolean {
    return this.restored.logsInUse.has(`${owner}/${id}`);
  }

  /**
   * The scrollback of each restored session comes from its output log when the log is still
   * there (it holds more than the record, and output after the record's last save): the record is
   * rewritten with the rebuilt screen, then the log is removed. A log that cannot be read is
   * logged and left (the record keeps its own screen; the next start tries again).
   */
  restoreFromLogs(): Promise<void> {
    this.logsRead = (async () => {
      for (const r of this.restored.list()) {
        const dir = deadSessionLogDir(this.stateDir, r.owner, r.id);
        try {
          const rebuilt = await screenFromLog(dir, { cols: r.cols, rows: r.rows });
          if (rebuilt && rebuilt.seq >= r.seq) await this.restored.replace({ ...r, ...rebuilt });
          removeDeadSessionLog(dir);
        } catch (err) {
          this.log('cold restore: the output log of a lost session could not be read', {
            id: r.id,
            dir,
            err: (err as Error).message,
          });
        }
      }
    })();
    return this.logsRead;
  }

  /** Ids a new session must not take: they name restored terminals. */
  isReserved(id: string): boolean {
    return this.restored.has(id);
  }

  /** The restored terminal listed under `alias` (its record keeps the alias until dismissed). */
  aliasHolder(alias: string): string | undefined {
    return this.restored.list().find((r) => r.alias === alias)?.id;
  }

  track(s: PtySession): void {
    this.persister.track(s);
  }

  /** A session was shut down on purpose (or forgotten after its exit): its record goes. */
  forget(id: string): void {
    // A file left behind by a failed removal is taken by the 24 h sweep.
    this.persister
      .forget(id)
      .catch((err: Error) => this.log('cold-restore record not removed', { id, err: err.message }));
  }

  /** The attach reply for a restored terminal, or undefined when `id` names none. */
  async attachResult(id: string, expectedIncarnationId?: unknown): Promise<StubAttachResult | undefined> {
    if (!this.restored.has(id)) return undefined;
    await this.logsRead;
    const r = this.restored.find(id);
    if (!r) return undefined;
    if (typeof expectedIncarnationId === 'string' && expectedIncarnationId !== r.incarnationId) {
      throw new PtyRelayError('INCARNATION_MISMATCH', `${id} was incarnation ${r.incarnationId}`, {
        id,
        incarnationId: r.incarnationId,
      });
    }
    return {
      id: r.id,
      pid: 0,
      incarnationId: r.incarnationId,
      cols: r.cols,
      rows: r.rows,
      seq: r.seq,
      generation: 'reset',
      title: r.title,
      ...(r.cwd !== undefined ? { cwd: r.cwd } : {}),
      ...(r.alias !== undefined ? { alias: r.alias } : {}),
      exited: r.exited ?? LOST_WITH_HOST,
      sessionExpired: true,
      coldRestore: coldRestoreOf(r),
    };
  }

  /** Restored terminals as `list` entries: exited, marked `coldRestored`. */
  listEntries(): Omit<PtyProcessInfo, 'host'>[] {
    return this.restored.list().map((r) => ({
      id: r.id,
      pid: 0,
      incarnationId: r.incarnationId,
      title: r.title,
      ...(r.cwd !== undefined ? { cwd: r.cwd } : {}),
      cols: r.cols,
      rows: r.rows,
      ...(r.name !== undefined ? { name: r.name } : {}),
      ...(r.alias !== undefined ? { alias: r.alias } : {}),
      exited: r.exited ?? LOST_WITH_HOST,
      coldRestored: true,
    }));
  }

  /** A relay shut a restored terminal down: the record is dismissed. True when `id` was one. */
  async dismiss(id: string): Promise<boolean> {
    if (!this.restored.has(id)) return false;
    await this.restored.dismiss(id);
    return true;
  }

  sweep(): void {
    this.restored.sweep();
  }

  /** The daemon exits without a request (SIGTERM at a reboot, idle): final saves, records kept. */
  stop(): Promise<void> {
    return this.persister.stop();
  }

  /** Ends persistence after a requested daemon shutdown: this daemon's records are removed. */
  async discard(ids: string[]): Promise<void> {
    const removed = await Promise.allSettled(ids.map((id) => this.persister.forget(id)));
    removed.forEach((r, i) => {
      // A file left behind by a failed removal is taken by the 24 h sweep.
      if (r.status === 'rejected')
        this.log('cold-restore record not removed', { id: ids[i], err: (r.reason as Error).message });
    });
    await this.persister.stop();
  }

  /** Saves every changed session now and waits (tests). */
  flush(): Promise<void> {
    return this.persister.flush();
  }
}
