import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { PtyRelayError } from '../../provider/errors.js';
import type { RemoteFs } from './remote-fs.js';

/** How often a waiting relay looks at the lock again. */
const POLL_MS = 200;
/** Lock dirs and files are private to the user. */
const PRIVATE_DIR_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;

/** Options for {@link InstallLock}. */
export interface InstallLockOptions {
  /** A lock whose owner file was not refreshed for this long belongs to a dead relay. */
  staleMs: number;
  /** Give up waiting after this long. */
  maxWaitMs: number;
  /** The host's clock in ms (lock file times are host times). */
  hostNow: () => number;
  /** What this lock guards (written into the owner file for humans). */
  purpose: string;
  /** This holder's identity (random by default); a lock left with the same token is taken back at once. */
  token?: string;
  /** Called once per wait period with the current owner's info. */
  onWait?: (owner: string | undefined) => void;
  /** Called when a stale lock was broken. */
  onTakeover?: (owner: string | undefined, ageMs: number) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A cross-relay mutex on the host: `mkdir <lockDir>` (atomic) plus an `owner` file whose mtime is
 * the heartbeat. A stale lock is broken by renaming it aside (only one breaker's rename succeeds);
 * if the dir renamed aside turns out to hold a newer owner than the one judged stale, it is put back.
 */
export class InstallLock {
  private readonly token: string;
  private readonly ownerPath: string;
  private heartbeat: NodeJS.Timeout | undefined;
  private held = false;

  constructor(
    private readonly fs: RemoteFs,
    private readonly lockDir: string,
    private readonly opts: InstallLockOptions,
  ) {
    this.ownerPath = `${lockDir}/owner`;
    this.token = opts.token ?? randomBytes(8).toString('hex');
  }

  /** Takes the lock, waiting while another live relay holds it. Returns whether it had to wait. */
  async acquire(): Promise<{ waited: boolean }> {
    const deadline = Date.now() + this.opts.maxWaitMs;
    let waited = false;
    for (;;) {
      if (await this.tryMkdir()) {
        this.startHeartbeat();
        return { waited };
      }
      const owner = await this.fs.readText(this.ownerPath);
      if (owner?.includes(`"token":"${this.token}"`)) {
        // Ours, left by an earlier upload method of this same install.
        this.held = true;
        this.startHeartbeat();
        return { waited };
      }
      const st = (await this.fs.stat(this.ownerPath)) ?? (await this.fs.stat(this.lockDir));
      if (!st) continue; // Released between our mkdir and stat.
      const ageMs = this.opts.hostNow() - st.mtimeMs;
      if (ageMs > this.opts.staleMs) {
        await this.breakStale(owner, ageMs);
        continue;
      }
      if (!waited) this.opts.onWait?.(owner);
      waited = true;
      if (Date.now() > deadline) {
        throw new PtyRelayError('DEPLOY_FAILED', `install lock ${this.lockDir} still held after waiting`, {
          owner,
          final: true,
        });
      }
      await sleep(POLL_MS);
    }
  }

  private async tryMkdir(): Promise<boolean> {
    try {
      await this.fs.mkdir(this.lockDir, PRIVATE_DIR_MODE);
    } catch (err) {
      // SFTP reports EEXIST as a generic failure; only an existing lock means "contended".
      if (await this.fs.stat(this.lockDir)) return false;
      throw err;
    }
    this.held = true;
    const info = {
      token: this.token,
      relayHost: hostname(),
      relayPid: process.pid,
      purpose: this.opts.purpose,
      since: new Date(this.opts.hostNow()).toISOString(),
    };
    await this.fs.writeFile(this.ownerPath, `${JSON.stringify(info)}\n`, PRIVATE_FILE_MODE);
    return true;
  }

  private async breakStale(owner: string | undefined, ageMs: number): Promise<void> {
    const aside = `${this.lockDir}.stale-${randomBytes(4).toString('hex')}`;
    try {
      await this.fs.rename(this.lockDir, aside);
    } catch {
      return; // Someone else broke or released it first.
    }
    if ((await this.fs.readText(`${aside}/owner`)) !== owner) {
      // The lock was re-taken between our look and our rename: hand it back.
      await this.fs.rename(aside, this.lockDir).catch(() => {});
      return;
    }
    this.opts.onTakeover?.(owner, ageMs);
    await this.fs.unlink(`${aside}/owner`).catch(() => {});
    await this.fs.rmdir(aside).catch(() => {}); // Leftovers are removed by GC under the lock.
  }

  private startHeartbeat(): void {
    // Refresh well within staleMs so a slow upload is never mistaken for a dead relay.
    const every = Math.max(POLL_MS, Math.floor(this.opts.staleMs / 4));
    this.heartbeat = setInterval(() => {
      this.fs.utimes(this.ownerPath, Math.floor(this.opts.hostNow() / 1000)).catch(() => {});
    }, every);
    this.heartbeat.unref();
  }

  /** Whether the owner file still carries our token (false after a takeover by someone else). */
  async stillOwned(): Promise<boolean> {
    const owner = await this.fs.readText(this.ownerPath);
    return owner?.includes(`"token":"${this.token}"`) === true;
  }

  /** Releases the lock if we still own it. Never throws. */
  async release(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    if (!this.held) return;
    this.held = false;
    try {
      if (!(await this.stillOwned())) return;
      await this.fs.unlink(this.ownerPath);
      await this.fs.rmdir(this.lockDir);
    } catch {
      // A lock left behind goes stale and is broken by the next relay.
    }
  }
}
