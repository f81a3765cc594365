import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Reservations of ids older than this may be deleted (the newest is always kept, so the counter
 * never goes back). The rule is "never reuse an id that was live or ended within 24 h"; the counter
 * never reuses one at all, the window only bounds how old an allocator's view of the directory may
 * get before pruning could matter (see RESCAN_INTERVAL_MS).
 */
export const ID_RESERVATION_RETENTION_MS = 24 * 60 * 60 * 1000;
/**
 * The directory is read (and pruned) at most this often; in between the allocator counts up from the
 * highest id it knows, skipping ids other daemons took (EEXIST). Safe while it stays far below the
 * retention window: an id above the last scan was created after it, so it is too young to be pruned.
 * A scan per spawn would cost a directory read of up to a day's ids.
 */
const RESCAN_INTERVAL_MS = 60 * 60 * 1000;
/** EEXIST retries before giving up on the counter (each one means another daemon took that id). */
const MAX_CLAIM_ATTEMPTS = 10_000;
/** Random ids (fallback) carry this many random bytes: 80 bits, never expected to repeat. */
const RANDOM_ID_BYTES = 10;
const RESERVATION = /^(\d+)$/;

export type IdLog = (msg: string, extra?: Record<string, unknown>) => void;

/**
 * Mints terminal ids that no daemon of this user reuses, whatever its build, across daemon restarts
 * and reboots: `pty-<n>` from a counter kept in the stub's persistent state dir as one empty file per
 * id, created with O_EXCL. Whoever creates file `<n>` owns id n, so daemons of different builds
 * allocate concurrently without a lock (and a crash leaves no stale lock behind); the next id is
 * one past the highest file present. When the state dir cannot be written (read-only or full home)
 * the id is random (`pty-r<hex>`) instead, which does not repeat either.
 */
export class TerminalIdAllocator {
  /** Highest id known to be taken: from the last scan and this allocator's own claims. */
  private highest = 0;
  private lastScan = Number.NEGATIVE_INFINITY;
  private warned = false;
  /** Reservations the last prune looked at (stat), for tests: pruning stops at the first young one. */
  lastPruneChecked = 0;

  /** `dir` is `<stateDir>/ids`, created 0700 on first use; `tag` is written into each reservation. */
  constructor(
    private readonly dir: string,
    private readonly tag: string,
    private readonly log: IdLog = () => {},
  ) {}

  next(): string {
    try {
      return `pty-${this.claim()}`;
    } catch (err) {
      if (!this.warned) {
        this.warned = true;
        this.log('terminal id counter unavailable; using random ids', {
          dir: this.dir,
          error: (err as Error).message,
        });
      }
      return `pty-r${randomBytes(RANDOM_ID_BYTES).toString('hex')}`;
    }
  }

  /** Reserves the next number: one past the highest reservation, skipping any another daemon took. */
  private claim(now = Date.now()): number {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const scanned = now - this.lastScan >= RESCAN_INTERVAL_MS ? this.reservations() : undefined;
    if (scanned) {
      this.lastScan = now;
      // Never below what this allocator already handed out, even if the directory was wiped.
      this.highest = scanned.reduce((max, r) => Math.max(max, r.n), this.highest);
    }
    let n = this.highest + 1;
    for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++, n++) {
      let fd: number;
      try {
        fd = openSync(join(this.dir, String(n)), 'wx', 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw err;
      }
      try {
        writeSync(fd, `${this.tag}\n`);
      } finally {
        closeSync(fd);
      }
      this.highest = n;
      if (scanned) this.prune(scanned, n, now);
      return n;
    }
    throw new Error(`no free id after ${MAX_CLAIM_ATTEMPTS} attempts`);
  }

  private reservations(): { n: number; name: string }[] {
    return readdirSync(this.dir).flatMap((name) => {
      const m = RESERVATION.exec(name);
      return m ? [{ n: Number(m[1]), name }] : [];
    });
  }

  /**
   * Deletes reservations past the retention window, oldest first, and stops at the first one still
   * inside it: numbers are claimed in increasing order, so the ones above it are younger still. A
   * day's worth of young reservations (thousands, for a user whose agents open many terminals)
   * then costs one stat instead of one each, on the spawn that triggered the scan. The newest is
   * never deleted (`claimed` is newer still). A reservation out of order (a clock step) only waits
   * for a later scan; nothing young is ever deleted, as each one is checked before its unlink.
   */
  private prune(seen: { n: number; name: string }[], claimed: number, now: number): void {
    this.lastPruneChecked = 0;
    for (const r of seen.filter((x) => x.n < claimed).sort((x, y) => x.n - y.n)) {
      const path = join(this.dir, r.name);
      this.lastPruneChecked++;
      try {
        if (now - statSync(path).mtimeMs <= ID_RESERVATION_RETENTION_MS) return;
        unlinkSync(path);
      } catch (err) {
        // Another daemon pruned it first; anything else only delays pruning.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
          this.log('cannot prune an id reservation', { path, error: (err as Error).message });
          return;
        }
      }
    }
  }
}
