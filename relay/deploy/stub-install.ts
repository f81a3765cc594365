import { randomBytes } from 'node:crypto';
import type { Client } from 'ssh2';
import { stubDirError } from '../../provider/daemon-runtime/stub-dir-check.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import type { DeployProgress } from './deploy-progress.js';
import { ExecFs, runHelper } from './exec-fs.js';
import { InstallLock } from './install-lock.js';
import type { RemoteFs, UploadMethod } from './remote-fs.js';
import type { CheckDirResult, GcResult, HelperOp, VerifyResult } from './remote-scripts.js';
import { Sftp } from './sftp-ops.js';
import { manifestJson, type StubArtifacts } from './stub-artifacts.js';

/** A live relay refreshes the lock every staleMs/4, so a minute without refresh means it died. */
export const DEFAULT_LOCK_STALE_MS = 60_000;
/** A holder keeps the lock alive while it uploads; beyond this the link is too slow to be useful. */
const LOCK_MAX_WAIT_MS = 5 * 60_000;
/** Room beyond the files themselves: the lock's owner file, `.complete`, file-system overhead. */
const INSTALL_SLACK_BYTES = 256 * 1024;
/**
 * After a failed SFTP start, the server's last messages for that channel may still be in flight;
 * an exec opened at once then got "Unable to exec" now and then (dropbear: 1 in 4 right away, none
 * of 15 after 300 ms), as if they were taken for the new channel's. Cheap: only first contact with
 * a host without SFTP pays it (the method that worked is tried first afterwards).
 */
const SFTP_FAILURE_SETTLE_MS = 500;
const PRIVATE_DIR_MODE = 0o700;
const COMPLETE_FILE_MODE = 0o644;

const rand = (): string => randomBytes(4).toString('hex');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** What {@link StubInstaller} needs from the deployer. */
export interface StubInstallContext {
  conn: Client;
  nodePath: string;
  artifacts: StubArtifacts;
  base: string;
  installDir: string;
  /** The method that worked on this host last time: tried first. */
  preferred?: UploadMethod;
  lockStaleMs?: number;
  hostNow: () => number;
  gcOp: (underLock: boolean, onlyIfIntact: boolean) => HelperOp;
  reportGc: (gc: GcResult) => void;
  progress: (p: DeployProgress) => void;
  log?: { info(o: object, msg?: string): void; warn(o: object, msg?: string): void };
}

/** How an install went: uploaded or found done by another relay, and over which method. */
export interface InstallOutcome {
  uploaded: boolean;
  bytes: number;
  method: UploadMethod;
}

/**
 * Installs the stub under the host's install lock: upload into a temp dir, verify it by sha256 on
 * the host, rename it into place, `.complete` last. SFTP first (or the method that worked last
 * time); when SFTP is missing or fails, the same steps over exec channels. Causes a retry will not
 * fix end with a typed error: the dir is read-only, full or noexec, or every method failed.
 */
export class StubInstaller {
  /** Set once the SSH connection closed: failures after that are the network's, not the host's. */
  private connClosed = false;

  constructor(private readonly c: StubInstallContext) {
    c.conn.once('close', () => {
      this.connClosed = true;
    });
  }

  /** Checks the install dir can take the stub before anything is uploaded. */
  async checkInstallDir(): Promise<void> {
    const need = this.c.artifacts.totalBytes + INSTALL_SLACK_BYTES;
    const [r] = (await runHelper(this.c.conn, this.c.nodePath, [
      { op: 'checkDir', dir: this.c.base, needBytes: need, exec: true, private: true },
    ])) as [CheckDirResult];
    if ('problem' in r) throw stubDirError('install', this.c.base, r);
  }

  async install(): Promise<InstallOutcome> {
    const order: UploadMethod[] = this.c.preferred === 'exec' ? ['exec', 'sftp'] : ['sftp', 'exec'];
    const tried: string[] = [];
    // One lock identity across methods: a lock the first method could not release is still ours.
    const token = randomBytes(8).toString('hex');
    for (const method of order) {
      if (tried.some((t) => t.startsWith('sftp:'))) await sleep(SFTP_FAILURE_SETTLE_MS);
      let fs: RemoteFs;
      try {
        fs = await this.open(method);
      } catch (err) {
        tried.push(`${method}: ${message(err)}`);
        this.c.log?.info({ method, err: message(err) }, `${method} not usable for the stub upload`);
        continue;
      }
      try {
        return { ...(await this.underLock(fs, token)), method };
      } catch (err) {
        // Failures of the install itself (lock, verify) or of the connection end it; the rest are the method's.
        if (this.connClosed || (isPtyRelayError(err) && err.details?.final === true)) throw err;
        await this.checkInstallDir(); // a full or read-only dir throws its own error
        tried.push(`${method}: ${message(err)}`);
        this.c.log?.warn({ method, err: message(err) }, `stub upload over ${method} failed`);
      } finally {
        fs.end();
      }
    }
    throw new PtyRelayError(
      'UPLOAD_FAILED',
      `could not upload the stub to ${this.c.installDir}: ${tried.join('; ')}`,
      { tried },
    );
  }

  private async open(method: UploadMethod): Promise<RemoteFs> {
    if (method === 'exec') return new ExecFs(this.c.conn, this.c.nodePath);
    const sftp = await Sftp.open(this.c.conn);
    // One request proves the stream carries SFTP, not a login shell's chatter.
    if (!(await sftp.stat(this.c.base).catch(() => undefined))) {
      sftp.end();
      throw new Error(`SFTP cannot see ${this.c.base}`);
    }
    return sftp;
  }

  private async underLock(fs: RemoteFs, token: string): Promise<{ uploaded: boolean; bytes: number }> {
    const { artifacts: a, base, installDir } = this.c;
    const lock = new InstallLock(fs, `${base}/install.lock`, {
      staleMs: this.c.lockStaleMs ?? DEFAULT_LOCK_STALE_MS,
      maxWaitMs: LOCK_MAX_WAIT_MS,
      hostNow: this.c.hostNow,
      purpose: `install ${a.dirName}`,
      token,
      onWait: (owner) =>
        this.c.progress({
          step: 'lock',
          message: `waiting for another install to finish (${owner?.trim()})`,
        }),
      onTakeover: (owner, ageMs) => this.c.log?.warn({ owner, ageMs }, 'took over a stale install lock'),
    });
    this.c.progress({ step: 'lock', message: `taking the install lock (${fs.method})` });
    try {
      await lock.acquire();
      // Whoever held the lock before us may have installed this very build.
      if (await fs.stat(`${installDir}/.complete`)) {
        const [again, gc] = (await runHelper(this.c.conn, this.c.nodePath, [
          { op: 'verify', dir: installDir, files: a.files, requireComplete: true, touch: true },
          this.c.gcOp(true, true),
        ])) as [VerifyResult, GcResult];
        if (again.bad.length === 0) {
          this.c.progress({ step: 'check', message: 'another relay installed it meanwhile' });
          this.c.reportGc(gc);
          return { uploaded: false, bytes: 0 };
        }
      }
      return { uploaded: true, bytes: await this.put(fs, lock) };
    } finally {
      await lock.release();
    }
  }

  /** Uploads into a temp dir, verifies it on the host, renames it into place, writes `.complete`. */
  private async put(fs: RemoteFs, lock: InstallLock): Promise<number> {
    const { artifacts: a, base, installDir } = this.c;
    const tmp = `${base}/.${a.dirName}.tmp-${rand()}`;
    let sent = 0;
    try {
      const dirs = new Set<string>();
      for (const f of a.files) {
        const parts = f.path.split('/').slice(0, -1);
        for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
      }
      await fs.mkdirs([tmp, ...[...dirs].sort().map((d) => `${tmp}/${d}`)], PRIVATE_DIR_MODE);
      this.c.progress({
        step: 'upload',
        message: `uploading ${a.files.length} files over ${fs.method}`,
        bytes: 0,
        totalBytes: a.totalBytes,
      });
      const files = a.files.map((f) => ({ ...f, remote: `${tmp}/${f.path}` }));
      await fs.upload(files, (f, fileBytes, chunk) => {
        sent += chunk;
        this.c.progress({
          step: 'upload',
          message: `${f.path} ${fileBytes}/${f.size}`,
          bytes: sent,
          totalBytes: a.totalBytes,
          file: f.path,
          fileBytes,
          fileTotalBytes: f.size,
        });
      });
      this.c.progress({ step: 'verify', message: 'verifying uploaded files on the host' });
      const [check] = (await runHelper(this.c.conn, this.c.nodePath, [
        { op: 'verify', dir: tmp, files: a.files, requireComplete: false, touch: false },
      ])) as [VerifyResult];
      if (check.bad.length > 0) {
        throw new PtyRelayError('DEPLOY_FAILED', 'uploaded stub files do not match', {
          bad: check.bad,
          final: true,
        });
      }
      this.c.progress({ step: 'install', message: `installing ${installDir}` });
      if (!(await lock.stillOwned()))
        throw new PtyRelayError('DEPLOY_FAILED', 'lost the install lock', { final: true });
      if (await fs.stat(installDir)) await fs.rename(installDir, `${base}/.${a.dirName}.old-${rand()}`);
      await fs.rename(tmp, installDir);
      await fs.writeFile(`${installDir}/.complete`, `${manifestJson(a)}\n`, COMPLETE_FILE_MODE);
    } catch (err) {
      await runHelper(this.c.conn, this.c.nodePath, [{ op: 'fs', call: 'rmrf', args: [tmp] }]).catch((e) =>
        this.c.log?.warn({ tmp, err: message(e) }, 'could not remove the temp dir (GC takes it later)'),
      );
      throw err;
    }
    const [gc] = (await runHelper(this.c.conn, this.c.nodePath, [this.c.gcOp(true, false)])) as [GcResult];
    this.c.reportGc(gc);
    return sent;
  }
}
