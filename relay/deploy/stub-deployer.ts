import type { Client } from 'ssh2';
import { defaultInstallBase } from '../../provider/daemon-runtime/stub-paths.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import type { DeployProgress } from './deploy-progress.js';
import { runHelper } from './exec-fs.js';
import { type ProbeResult, probeHost } from './host-probe.js';
import type { UploadMethod } from './remote-fs.js';
import {
  CACHE_TOKEN,
  type EnsureResult,
  firstContactHelper,
  type GcResult,
  type HelperOp,
  HOME_TOKEN,
  type VerifyResult,
} from './remote-scripts.js';
import {
  collectStubArtifacts,
  STUB_PLATFORMS,
  type StubArtifacts,
  type StubPlatform,
} from './stub-artifacts.js';
import { StubInstaller } from './stub-install.js';

export type { DeployProgress };

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
  /** How files were written when the deploy needed to (undefined when the install was intact). */
  method?: UploadMethod;
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
  /** Install base on the host (`installDir` of the host config; `~/` = the host's home). */
  installDir?: string;
  /** The upload method that worked on this host before: tried first. */
  uploadMethod?: UploadMethod;
  /**
   * Use an intact install only: STUB_NOT_INSTALLED instead of installing (adoption at relay
   * start). Asked when the install turns out missing, so a real use that arrived meanwhile deploys.
   */
  adoptOnly?: () => boolean;
}

/** The stub bundle targets node18 (Debian bookworm's node). */
const DEFAULT_MIN_NODE_MAJOR = 18;
/** Long enough for a relay to go from verifying a dir to starting its daemon. */
const DEFAULT_GC_GRACE_MS = 10 * 60_000;
/** Error messages carry the end of stderr, where the reason usually is. */
const STDERR_TAIL_BYTES = 2048;

const tail = (s: string): string => s.slice(-STDERR_TAIL_BYTES);

/**
 * Installs the agent stub on a connected host: probes node and platform, reuses an intact install
 * (`<install base>/stub-<version>-<sha12>/`, verified by sha256 on the host) or uploads a fresh
 * one under a cross-relay lock (SFTP, else exec channels; see StubInstaller), then removes old stub
 * dirs no daemon runs from. A tampered or partial install is replaced as a whole dir. Every remote
 * command is `/bin/sh -s` with its script on stdin, whatever the user's login shell.
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
   * @throws PtyRelayError NODE_MISSING, NODE_TOO_OLD, UNSUPPORTED_PLATFORM, DIR_NOT_WRITABLE,
   * DISK_FULL, DIR_NOEXEC, UPLOAD_FAILED (none retryable) or DEPLOY_FAILED.
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
    const base = defaultInstallBase(
      { HOME: probe.home, XDG_CACHE_HOME: probe.xdgCache },
      this.opts.installDir,
    );
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
    const [verify, now, gc] = (await this.helper(probe, [
      { op: 'verify', dir: installDir, files: artifacts.files, requireComplete: true, touch: true },
      { op: 'now' },
      this.gcOp(base, artifacts.dirName, false, true),
    ])) as [VerifyResult, number, GcResult];
    this.hostSkewMs = now - (sent + Date.now()) / 2;
    if (verify.complete && verify.bad.length === 0) {
      this.reportGc(gc);
      return this.done(result(false, 0), t0);
    }
    if (this.opts.adoptOnly?.())
      throw new PtyRelayError('STUB_NOT_INSTALLED', `no intact stub of this build in ${installDir}`, {
        installDir,
      });
    if (verify.complete)
      this.opts.log?.warn({ installDir, bad: verify.bad }, 'stub install damaged; reinstalling');

    const installer = new StubInstaller({
      conn: this.conn,
      nodePath: probe.node.execPath,
      artifacts,
      base,
      installDir,
      preferred: this.opts.uploadMethod,
      lockStaleMs: this.opts.lockStaleMs,
      hostNow: () => Date.now() + this.hostSkewMs,
      gcOp: (underLock, onlyIfIntact) => this.gcOp(base, artifacts.dirName, underLock, onlyIfIntact),
      reportGc: (g) => this.reportGc(g),
      progress: (p) => this.progress(p),
      log: this.opts.log,
    });
    await installer.checkInstallDir();
    const out = await installer.install();
    return this.done({ ...result(out.uploaded, out.bytes), method: out.method }, t0);
  }

  /**
   * What the probe's remote command also does, per platform (it learns which one it is on):
   * verify the install, read the clock, collect old dirs and, if asked, ensure the daemon; paths
   * under `$HOME` ({@link HOME_TOKEN}), which the relay does not know yet either.
   */
  private firstContactOps(): Record<string, HelperOp[]> {
    const configured = this.opts.installDir;
    const base = !configured
      ? `${CACHE_TOKEN}/ptyrelay`
      : configured.startsWith('~/')
        ? `${HOME_TOKEN}/${configured.slice(2)}`
        : configured;
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
    const via = r.method ? `, over ${r.method}` : '';
    this.progress({ step: 'done', message: `stub ${what} in ${ms} ms${via}` });
    this.opts.log?.info(
      { installDir: r.installDir, uploaded: r.uploaded, bytes: r.bytesUploaded, method: r.method, ms },
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

  /** Runs the node helper with `ops` on the host's node and returns one result per op. */
  private helper(probe: ProbeResult, ops: HelperOp[]): Promise<unknown[]> {
    return runHelper(this.conn, probe.node.execPath, ops);
  }
}
