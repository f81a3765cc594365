import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfs } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { HistoryLimits } from './history-limits.js';
import { SessionLog, type SessionLogOwner } from './session-log.js';

/** History dirs: the owner only. */
export const HISTORY_DIR_MODE = 0o700;
/** The free space of the state dir's file system is looked at again at most this often (at a segment roll). */
const STATFS_EVERY_MS = 1000;
/** A daemon's own dir under `<stateDir>/history`: its pid and the kernel's start time of that pid. */
const DAEMON_DIR = /^d-(\d+)-(\d+)$/;

export type HistoryLog = (msg: string, extra?: Record<string, unknown>) => void;

/**
 * True for a dead daemon's session log that must stay at start: a cold-restore record still needs
 * it. `owner` is the daemon's `<pid>:<start time>` (process-identity.ts).
 */
export type KeepDeadLog = (owner: string, sessionId: string) => boolean;

/** The log dir a daemon (`<pid>:<start time>`) kept for session `id` under `stateDir`. */
export function deadSessionLogDir(stateDir: string, owner: string, id: string): string {
  const colon = owner.indexOf(':');
  const start = owner.slice(colon + 1) || '0';
  return join(stateDir, 'history', `d-${owner.slice(0, colon)}-${start}`, id);
}

/** Removes a dead daemon's session log (read by a cold restore), and the daemon's dir once empty. */
export function removeDeadSessionLog(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  const parent = dirname(dir);
  if (DAEMON_DIR.test(basename(parent)) && readdirSync(parent).length === 0)
    rmSync(parent, { recursive: true, force: true });
}

/**
 * The output history of one daemon: `<stateDir>/history/d-<pid>-<start>/<session id>/` holds a
 * session's segments (0700 dirs, 0600 files). Keeps the host-wide cap (all of this daemon's logs
 * together: at most `hostBytes` and `freePercent` of the file system's free space), dropping the
 * oldest segment of any session first. At start it removes the dirs of daemons that are gone
 * (their sessions died with them); at exit its own.
 */
export class HistoryStore implements SessionLogOwner {
  private readonly logs = new Set<SessionLog>();
  private total = 0;
  private freeBytes = Number.POSITIVE_INFINITY;
  private statfsAt = 0;
  private statfsRunning = false;
  private warnedCap = false;
  /** Set when the history dir could not be made: every session runs on its RAM ring. */
  readonly disabledReason: string | undefined;
  readonly dir: string;

  constructor(
    stateDir: string,
    readonly limits: HistoryLimits,
    private readonly log: HistoryLog,
    keepDeadLog: KeepDeadLog = () => false,
  ) {
    const root = join(stateDir, 'history');
    this.dir = join(root, `d-${process.pid}-${processStartTime(process.pid) ?? 0}`);
    if (!limits.enabled) {
      this.disabledReason = 'history off';
      return;
    }
    try {
      makePrivateDir(root);
      removeDeadDaemonDirs(root, log, keepDeadLog);
      makePrivateDir(this.dir);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      this.disabledReason = `${e.code ?? 'error'}: ${e.message}`;
      log('output history disabled: its dir cannot be used; sessions keep a RAM ring only', {
        dir: this.dir,
        code: e.code,
        error: e.message,
      });
    }
    this.refreshFree(true);
  }

  get enabled(): boolean {
    return this.disabledReason === undefined;
  }

  /** Bytes held by every log of this daemon. */
  get totalBytes(): number {
    return this.total;
  }

  /** What the logs may hold together right now. */
  get budget(): number {
    const share = Math.floor((this.limits.freePercent / 100) * (this.freeBytes + this.total));
    return Math.min(this.limits.hostBytes, share);
  }

  /** A log for a new session, or `undefined` (history off, or its dir cannot be made: logged). */
  open(sessionId: string, startSeq = 0): SessionLog | undefined {
    if (!this.enabled) return undefined;
    const dir = join(this.dir, sessionId);
    try {
      makePrivateDir(dir);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      this.log('output history unavailable for a session; it keeps a RAM ring only', {
        id: sessionId,
        code: e.code,
        error: e.message,
      });
      return undefined;
    }
    const log = new SessionLog(dir, startSeq, this.limits, this);
    this.logs.add(log);
    return log;
  }

  /** The session is gone: its log's files go too. */
  close(log: SessionLog): void {
    if (!this.logs.delete(log)) return;
    log.destroy();
  }

  /** Daemon exit: every log and the daemon's dir. */
  dispose(): void {
    for (const log of this.logs) log.destroy();
    this.logs.clear();
    if (this.enabled) rmSync(this.dir, { recursive: true, force: true });
  }

  resized(_log: SessionLog, delta: number): void {
    this.total += delta;
    if (delta > 0 && this.total > this.budget) this.evict();
  }

  rolled(): void {
    this.refreshFree(false);
  }

  failed(log: SessionLog, err: NodeJS.ErrnoException): void {
    this.logs.delete(log);
    this.log('output history failed for a session; it keeps a RAM ring only (replays reach back less far)', {
      dir: log.dir,
      code: err.code,
      error: err.message,
    });
  }

  /** Drops the oldest segments across sessions until the logs fit the budget (each keeps its newest). */
  private evict(): void {
    const budget = this.budget;
    while (this.total > budget) {
      let oldest: SessionLog | undefined;
      for (const l of this.logs)
        if (l.segmentCount > 1 && (!oldest || l.oldestAt < oldest.oldestAt)) oldest = l;
      if (!oldest?.dropOldest()) break;
    }
    if (this.total > budget && !this.warnedCap) {
      this.warnedCap = true;
      this.log('output history is over its host-wide cap with one segment per session', {
        bytes: this.total,
        budget,
      });
    }
  }

  private refreshFree(now: boolean): void {
    // statfs came in node 18.15: an older node has no free-space share (the byte cap still holds).
    if (typeof statfs !== 'function' || !this.enabled || this.statfsRunning) return;
    if (!now && Date.now() - this.statfsAt < STATFS_EVERY_MS) return;
    this.statfsRunning = true;
    this.statfsAt = Date.now();
    statfs(this.dir, (err, s) => {
      this.statfsRunning = false;
      if (err) {
        this.log('statfs of the history dir failed; its free-space share is not applied', { code: err.code });
        return;
      }
      this.freeBytes = Number(s.bavail) * Number(s.bsize);
      if (this.total > this.budget) this.evict();
    });
  }
}

function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: HISTORY_DIR_MODE });
  // mkdir leaves an existing dir's mode alone (and the umask may have narrowed a new one).
  chmodSync(dir, HISTORY_DIR_MODE);
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot): tells a reused pid from its first owner. */
function processStartTime(pid: number): string | undefined {
  const path = `/proc/${pid}/stat`;
  if (!existsSync(path)) return undefined;
  const stat = readFileSync(path, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

function daemonAlive(pid: number, start: string): boolean {
  if (existsSync('/proc/self/stat')) return processStartTime(pid) === start;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The logs of daemons that are gone: their sessions died with them. Removed here, at the next
 * start, except those a cold-restore record still needs (the restore reads and removes them; an
 * expired record no longer keeps its log).
 */
function removeDeadDaemonDirs(root: string, log: HistoryLog, keep: KeepDeadLog): void {
  for (const name of readdirSync(root)) {
    const m = DAEMON_DIR.exec(name);
    if (!m || daemonAlive(Number(m[1]), m[2])) continue;
    const dir = join(root, name);
    const owner = `${m[1]}:${m[2] === '0' ? '' : m[2]}`;
    const kept = readdirSync(dir).filter((id) => keep(owner, id));
    if (kept.length === 0) {
      rmSync(dir, { recursive: true, force: true });
      log('removed the output history of a daemon that is gone', { dir });
      continue;
    }
    for (const id of readdirSync(dir))
      if (!kept.includes(id)) rmSync(join(dir, id), { recursive: true, force: true });
    log('kept output logs of a daemon that is gone for cold restore', { dir, ids: kept });
  }
}
