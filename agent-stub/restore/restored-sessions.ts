import type { RestoreRecord } from './restore-record.js';
import type { RestoreStore } from './restore-store.js';

/** A dead session's record is reported this long after its last save (the reboot), then removed. */
export const RESTORE_RETENTION_MS = 24 * 60 * 60 * 1000;
/** A temp file younger than this may be a write in progress (another daemon's); older ones are debris. */
const STALE_TEMP_MS = 60_000;

type Log = (msg: string, extra?: Record<string, unknown>) => void;

/**
 * The records of sessions that died with an earlier daemon of this scope (the host rebooted, or
 * the daemon was killed): found once at start, reported to every relay that asks, removed after
 * {@link RESTORE_RETENTION_MS} or when a relay dismisses the terminal. Records whose writer still
 * runs (another build's daemon sharing the runtime dir) are left to it.
 */
export class RestoredSessions {
  private readonly records = new Map<string, RestoreRecord>();
  /**
   * `<owner>/<id>` of every unexpired record whose writer is gone, of any scope: the output logs
   * those sessions left must stay until a restore has read them (or the record expired).
   */
  readonly logsInUse = new Set<string>();

  constructor(
    private readonly store: RestoreStore,
    private readonly scope: string,
    private readonly log: Log,
  ) {}

  /** Reads the restore dir: adopts this scope's dead records, removes expired and broken files. */
  load(ownerAlive: (owner: string) => boolean, now = Date.now()): void {
    for (const f of this.store.readAll()) {
      if (!f.record) {
        if (now - f.mtimeMs < STALE_TEMP_MS) continue;
        this.log('removing unreadable cold-restore file', { file: f.file, reason: f.error });
        this.store.removeFileSync(f.file);
        continue;
      }
      const r = f.record;
      if (now - r.savedAt > RESTORE_RETENTION_MS) {
        this.store.removeFileSync(f.file);
        continue;
      }
      if (ownerAlive(r.owner)) continue;
      this.logsInUse.add(`${r.owner}/${r.id}`);
      if (r.scope === this.scope) this.records.set(r.id, r);
    }
    if (this.records.size > 0) this.log('sessions to cold-restore', { ids: [...this.records.keys()] });
  }

  find(id: string): RestoreRecord | undefined {
    return this.records.get(id);
  }

  list(): RestoreRecord[] {
    return [...this.records.values()];
  }

  has(id: string): boolean {
    return this.records.has(id);
  }

  /** Replaces an adopted record (its screen rebuilt from the session's log) in memory and on disk. */
  async replace(r: RestoreRecord): Promise<void> {
    if (!this.records.has(r.id)) return;
    this.records.set(r.id, r);
    await this.store.write(this.scope, r.id, JSON.stringify(r));
  }

  /** Forgets a record and removes its file (a relay dismissed the terminal). */
  async dismiss(id: string): Promise<void> {
    if (!this.records.delete(id)) return;
    await this.store.remove(this.scope, id);
  }

  /**
   * Removes records past retention, this scope's and (by file age, without reading them) any
   * other's. Runs every minute, so it reads no record: each is a screen with its scrollback.
   */
  sweep(now = Date.now()): void {
    for (const [id, r] of this.records) {
      if (now - r.savedAt > RESTORE_RETENTION_MS) {
        this.records.delete(id);
        this.store.removeFileSync(this.store.fileOf(this.scope, id));
      }
    }
    for (const f of this.store.files()) {
      if (now - f.mtimeMs > RESTORE_RETENTION_MS) this.store.removeFileSync(f.file);
    }
  }
}
