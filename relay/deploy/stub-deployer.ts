import { randomBytes } from 'node:crypto';
import type { Client } from 'ssh2';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { type ProbeResult, probeHost } from './host-probe.js';
import { InstallLock } from './install-lock.js';
import { remoteExec } from './remote-exec.js';
import {
  type EnsureResult,
  firstContactHelper,
  type GcResult,
  type HelperOp,
  HOME_TOKEN,
  helperScript,
  newMarker,
  parseHelperOutput,
  type VerifyResult,
} from './remote-scripts.js';
import { Sftp } from './sftp-ops.js';
import { shellQuote } from './shell-quote.js';
import {
  collectStubArtifacts,
  manifestJson,
  STUB_PLATFORMS,
  type StubArtifacts,
  type StubPlatform,
} from './stub-artifacts.js';

/** One progress report of {@link StubDeployer.deploy}. */
export interface DeployProgress {
  step: 'probe' | 'check' | 'lock' | 'upload' | 'verify' | 'install' | 'gc' | 'done';
  message: string;
  /** Upload: bytes sent so far, all files together. */
  bytes?: number;
  totalBytes?: number;
  /** Upload: the file the last chunk belonged to, and its own progress. */
  file?: string;
  fileBytes?: number;
  fileTotalBytes?: number;
}

/** Where the stub ended up and how to run it. */
export interface DeployResult {
  installDir: string;
  stubPath: string;
  /** Absolute path of the host's node binary (resolved, so nvm/fnm shims do not matter). */
  nodePath: string;
  nodeVersion: string;
  home: string;
  platform: StubPlatform;
  uploaded: boolean;
  bytesUploaded: number;
  /** sha256 of stub.cjs, 12 hex digits (what the daemon reports as its buildId). */
  buildId: string;
  /**
   * With {@link StubDeployerOptions.ensureDaemon}: the daemon first contact already made sure
   * runs (what `stub.cjs ensure` reports), so the link can go straight to its socket.
   */
  daemon?: { socketPath: string; legacy: { buildId: string; socketPath: string }[] };
}

/** Options for {@link StubDeployer}. */
export interface StubDeployerOptions {
  onProgress?: (p: DeployProgress) => void;
  log?: { info(o: object, msg?: string): void; warn(o: object, msg?: string): void };
  /** Oldest node major the stub runs on; default 18. */
  minNodeMajor?: number;
  artifacts?: (p: StubPlatform) => StubArtifacts;
  /** An install lock not refreshed for this long is taken over; default 60 s. */
  lockStaleMs?: number;
  /** GC spares stub dirs installed or verified this recently (a relay may be about to start them). */
  gcGraceMs?: number;
  /**
   * `ensure` arguments: when the install is already intact, first contact also starts the daemon
   * if needed (in the probe's remote command) and reports it in {@link DeployResult.daemon}.
   */
  ensureDaemon?: string[];
}

/** The stub bundle targets node18 (Debian bookworm's node). */
const DEFAULT_MIN_NODE_MAJOR = 18;
/** A live relay refreshes the lock every staleMs/4, so a minute without refresh means it died. */
const DEFAULT_LOCK_STALE_MS = 60_000;
/** Long enough for a relay to go from verifying a dir to starting its daemon. */
const DEFAULT_GC_GRACE_MS = 10 * 60_000;
/** A holder keeps the lock alive while it uploads; beyond this the link is too slow to be useful. */
const LOCK_MAX_WAIT_MS = 5 * 60_000;
/** Hashing ~1 MB or scanning /proc is quick; this only catches a wedged host. */
const HELPER_TIMEOUT_MS = 60_000;
/** Error messages carry the end of stderr, where the reason usually is. */
const STDERR_TAIL_BYTES = 2048;
const PRIVATE_DIR_MODE = 0o700;
const COMPLETE_FILE_MODE = 0o644;

const tail = (s: string): string => s.slice(-STDERR_TAIL_BYTES);
const rand = (): string => randomBytes(4).toString('hex');

/**
 * Installs the agent stub on a connected host: probes node and platform, reuses an intact install
 * (`~/.cache/ptyrelay/stub-<version>-<sha12>/`, verified by sha256 on the host) or uploads a fresh
 * one under a cross-relay lock (SFTP to a temp dir, verify, rename, `.complete` last), then removes
 * old stub dirs no daemon runs from. A tampered or partial install is replaced as a whole dir.
 */
export class StubDeployer {
  private readonly minNodeMajor: number;
  private hostSkewMs = 0;

  constructor(
    private readonly conn: Client,
    private readonly opts: StubDeployerOptions = {},
  ) {
    this.minNodeMajor = opts.minNodeMajor ?? DEFAULT_MIN_NODE_MAJOR;
  }

  /**
   * Makes sure the stub for this host's platform is installed and intact.
   * @throws PtyRelayError NODE_MISSING, NODE_TOO_OLD, UNSUPPORTED_PLATFORM or DEPLOY_FAILED.
   */
  async deploy(): Promise<DeployResult> {
    try {
      return await this.run();
    } catch (err) {
      if (isPtyRelayError(err) && err.code !== 'TIMEOUT') throw err;
      const e = err as Error & { details?: { stderr?: string } };
      throw new PtyRelayError('DEPLOY_FAILED', `stub deployment failed: ${e.message}`, {
        cause: isPtyRelayError(err) ? err.code : undefined,
        stderr: tail(e.details?.stderr ?? ''),
      });
    }
  }

  private progress(p: DeployProgress): void {
    this.opts.onProgress?.(p);
  }

  private async run(): Promise<DeployResult> {
    const t0 = Date.now();
    this.progress({ step: 'probe', message: 'probing the host (platform, node)' });
    const sentProbe = Date.now();
    const probe = await probeHost(this.conn, {
      minNodeMajor: this.minNodeMajor,
      minGlibc: (p) => (this.opts.artifacts ?? collectStubArtifacts)(p).minGlibc,
      helper: (marker) => firstContactHelper(marker, this.minNodeMajor, this.firstContactOps()),
    });
    this.progress({ step: 'probe', message: probe.summary });
    const artifacts = (this.opts.artifacts ?? collectStubArtifacts)(probe.platform);
    const base = `${probe.home}/.cache/ptyrelay`;
    const installDir = `${base}/${artifacts.dirName}`;
    const stub = artifacts.files.find((f) => f.path === 'stub.cjs');
    if (!stub) throw new PtyRelayError('DEPLOY_FAILED', 'stub artifacts lack stub.cjs');
    const result = (uploaded: boolean, bytesUploaded: number): DeployResult => ({
      installDir,
      stubPath: `${installDir}/stub.cjs`,
      nodePath: probe.node.execPath,
      nodeVersion: probe.node.version,
      home: probe.home,
      platform: probe.platform,
      uploaded,
      bytesUploaded,
      buildId: stub.sha256.slice(0, 12),
    });

    this.progress({ step: 'check', message: `checking ${installDir}` });
    const quick = this.firstContactResults(probe, sentProbe);
    if (quick) return this.done({ ...result(false, 0), daemon: quick.daemon }, t0);
    const sent = Date.now();
    const [, verify, now, gc] = (await this.helper(probe, [
      { op: 'ensureDir', dir: base },
      { op: 'verify', dir: installDir, files: artifacts.files, requireComplete: true, touch: true },
      { op: 'now' },
      this.gcOp(base, artifacts.dirName, false, true),
    ])) as [null, VerifyResult, number, GcResult];
    this.hostSkewMs = now - (sent + Date.now()) / 2;
    if (verify.complete && verify.bad.length === 0) {
      this.reportGc(gc);
      return this.done(result(false, 0), t0);
    }
    if (verify.complete)
      this.opts.log?.warn({ installDir, bad: verify.bad }, 'stub install damaged; reinstalling');

    const sftp = await Sftp.open(this.conn);
    try {
      const lock = new InstallLock(sftp, `${base}/install.lock`, {
        staleMs: this.opts.lockStaleMs ?? DEFAULT_LOCK_STALE_MS,
        maxWaitMs: LOCK_MAX_WAIT_MS,
        hostNow: () => Date.now() + this.hostSkewMs,
        purpose: `install ${artifacts.dirName}`,
        onWait: (owner) =>
          this.progress({
            step: 'lock',
            message: `waiting for another install to finish (${owner?.trim()})`,
          }),
        onTakeover: (owner, ageMs) => this.opts.log?.warn({ owner, ageMs }, 'took over a stale install lock'),
      });
      this.progress({ step: 'lock', message: 'taking the install lock' });
      try {
        await lock.acquire();
        // Whoever held the lock before us may have installed this very build.
        if (await sftp.stat(`${installDir}/.complete`)) {
          const [again, gc2] = (await this.helper(probe, [
            { op: 'verify', dir: installDir, files: artifacts.files, requireComplete: true, touch: true },
            this.gcOp(base, artifacts.dirName, true, true),
          ])) as [VerifyResult, GcResult];
          if (again.bad.length === 0) {
            this.reportGc(gc2);
            return this.done(result(false, 0), t0);
          }
        }
        const bytes = await this.install(sftp, probe, artifacts, base, installDir, lock);
        return this.done(result(true, bytes), t0);
      } finally {
        await lock.release();
      }
    } finally {
      sftp.end();
    }
  }

  /**
   * What the probe's remote command also does, per platform (it learns which one it is on):
   * verify the install, read the clock, collect old dirs and, if asked, ensure the daemon; paths
   * under `$HOME` ({@link HOME_TOKEN}), which the relay does not know yet either.
   */
  private firstContactOps(): Record<string, HelperOp[]> {
    const base = `${HOME_TOKEN}/.cache/ptyrelay`;
    const out: Record<string, HelperOp[]> = {};
    for (const platform of STUB_PLATFORMS) {
      let a: StubArtifacts;
      try {
        a = (this.opts.artifacts ?? collectStubArtifacts)(platform);
      } catch {
        continue; // no binary for it: the probe's platform check reports that
      }
      const dir = `${base}/${a.dirName}`;
      const files = a.files.map(({ path, size, sha256 }) => ({ path, size, sha256 }));
      out[platform] = [
        { op: 'verify', dir, files, requireComplete: true, touch: true },
        { op: 'now' },
        this.gcOp(base, a.dirName, false, true),
      ];
      const args = this.opts.ensureDaemon;
      if (args) out[platform].push({ op: 'ensure', stub: `${dir}/stub.cjs`, args, onlyIfIntact: true });
    }
    return out;
  }

  /**
   * The first-contact results when they settle the deploy: the probe's node ran them on the
   * platform and home the probe reported, and found the install intact (and the daemon up, if
   * asked). Anything else goes the long way (check, install, ensure).
   */
  private firstContactResults(
    probe: ProbeResult,
    sent: number,
  ): { daemon?: DeployResult['daemon'] } | undefined {
    const r = probe.helperResults;
    const meta = r?.[0] as { platform?: string; home?: string } | undefined;
    if (!r || r.length < 4 || meta?.platform !== probe.platform || meta?.home !== probe.home)
      return undefined;
    const [, verify, now, gc, ensure] = r as [unknown, VerifyResult, number, GcResult, EnsureResult?];
    if (!verify?.complete || verify.bad.length > 0) return undefined;
    this.hostSkewMs = now - (sent + Date.now()) / 2;
    this.reportGc(gc);
    if (!this.opts.ensureDaemon) return {};
    if (!ensure || !('socketPath' in ensure)) {
      if (ensure && 'error' in ensure)
        this.opts.log?.warn({ error: ensure.error }, 'first-contact ensure failed');
      return undefined;
    }
    return { daemon: { socketPath: ensure.socketPath, legacy: ensure.legacy ?? [] } };
  }

  private done(r: DeployResult, t0: number): DeployResult {
    const ms = Date.now() - t0;
    const what = r.uploaded ? `installed (${r.bytesUploaded} bytes uploaded)` : 'already installed';
    this.progress({ step: 'done', message: `stub ${what} in ${ms} ms` });
    this.opts.log?.info(
      { installDir: r.installDir, uploaded: r.uploaded, bytes: r.bytesUploaded, ms },
      'stub ready',
    );
    return r;
  }

  private gcOp(base: string, keep: string, underLock: boolean, onlyIfIntact: boolean): HelperOp {
    const graceMs = this.opts.gcGraceMs ?? DEFAULT_GC_GRACE_MS;
    return { op: 'gc', base, keep, graceMs, underLock, onlyIfIntact };
  }

  private reportGc(gc: GcResult): void {
    if (gc.skipped || (gc.removed.length === 0 && gc.kept.length === 0)) return;
    const kept = gc.kept.map((k) => `${k.name} (${k.reason})`);
    const message = `removed ${gc.removed.length} old stub dir(s)${kept.length ? `; kept ${kept.join(', ')}` : ''}`;
    this.progress({ step: 'gc', message });
    if (gc.removed.length > 0)
      this.opts.log?.info({ removed: gc.removed, kept: gc.kept }, 'removed old stub dirs');
  }

  /** Uploads into a temp dir, verifies it on the host, renames it into place, writes `.complete`. */
  private async install(
    sftp: Sftp,
    probe: ProbeResult,
    a: StubArtifacts,
    base: string,
    installDir: string,
    lock: InstallLock,
  ): Promise<number> {
    const tmp = `${base}/.${a.dirName}.tmp-${rand()}`;
    let sent = 0;
    try {
      const dirs = new Set<string>();
      for (const f of a.files) {
        const parts = f.path.split('/').slice(0, -1);
        for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
      }
      await sftp.mkdir(tmp, PRIVATE_DIR_MODE);
      for (const d of [...dirs].sort()) await sftp.mkdir(`${tmp}/${d}`, PRIVATE_DIR_MODE);
      this.progress({
        step: 'upload',
        message: `uploading ${a.files.length} files`,
        bytes: 0,
        totalBytes: a.totalBytes,
      });
      // All files at once: on a slow link per-file round trips dominate, not bandwidth.
      await Promise.all(
        a.files.map((f) =>
          sftp.fastPut(f.source, `${tmp}/${f.path}`, {
            mode: f.mode,
            step: (fileBytes, chunk, fileTotalBytes) => {
              sent += chunk;
              this.progress({
                step: 'upload',
                message: `${f.path} ${fileBytes}/${fileTotalBytes}`,
                bytes: sent,
                totalBytes: a.totalBytes,
                file: f.path,
                fileBytes,
                fileTotalBytes,
              });
            },
          }),
        ),
      );
      this.progress({ step: 'verify', message: 'verifying uploaded files on the host' });
      const [check] = (await this.helper(probe, [
        { op: 'verify', dir: tmp, files: a.files, requireComplete: false, touch: false },
      ])) as [VerifyResult];
      if (check.bad.length > 0) {
        throw new PtyRelayError('DEPLOY_FAILED', 'uploaded stub files do not match', { bad: check.bad });
      }
      this.progress({ step: 'install', message: `installing ${installDir}` });
      if (!(await lock.stillOwned())) throw new PtyRelayError('DEPLOY_FAILED', 'lost the install lock');
      if (await sftp.stat(installDir)) await sftp.rename(installDir, `${base}/.${a.dirName}.old-${rand()}`);
      await sftp.rename(tmp, installDir);
      await sftp.writeFile(`${installDir}/.complete`, `${manifestJson(a)}\n`, COMPLETE_FILE_MODE);
    } catch (err) {
      await remoteExec(this.conn, `rm -rf ${shellQuote(tmp)}`, { timeoutMs: HELPER_TIMEOUT_MS }).catch(
        () => {},
      );
      throw err;
    }
    const [gc] = (await this.helper(probe, [this.gcOp(base, a.dirName, true, false)])) as [GcResult];
    this.reportGc(gc);
    return sent;
  }

  /** Runs the node helper with `ops` on the host's node and returns one result per op. */
  private async helper(probe: ProbeResult, ops: HelperOp[]): Promise<unknown[]> {
    const marker = newMarker();
    const cmd = `${shellQuote(probe.node.execPath)} -`;
    const r = await remoteExec(this.conn, cmd, {
      timeoutMs: HELPER_TIMEOUT_MS,
      stdin: helperScript(marker, ops),
    });
    const out = r.code === 0 ? parseHelperOutput(r.stdout, marker) : undefined;
    if (!out || out.length !== ops.length) {
      throw new PtyRelayError(
        'DEPLOY_FAILED',
        `remote step ${ops.map((o) => o.op).join('+')} failed (exit ${r.code ?? r.signal})`,
        {
          stderr: tail(r.stderr),
        },
      );
    }
    return out;
  }
}
