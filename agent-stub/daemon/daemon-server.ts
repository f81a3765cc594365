import { chmodSync, mkdirSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { assertPrivateRuntime } from '../../provider/daemon-runtime/private-dir.js';
import { socketAnswers } from '../../provider/daemon-runtime/socket-probe.js';
import { bundleBuildId, daemonLockPath, daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { type ReadinessConfig, resolveReadinessConfig } from '../../provider/readiness-config.js';
import type { TerminalPalette } from '../../provider/terminal-queries.js';
import { utcIsoTime } from '../../provider/utc-time.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { DEFAULT_TAIL_BYTES, type HistoryLimits, resolveHistoryLimits } from '../history/history-limits.js';
import { HistoryStore } from '../history/history-store.js';
import { LspService } from '../lsp/lsp-service.js';
import { heapTrimAddon, trimOnPool } from '../native/heap-trim.js';
import { AgentRequests } from '../readiness/agent-requests.js';
import { ColdRestoreService } from '../restore/cold-restore.js';
import { type ModelRecovery, ScreenModelHost } from '../session/screen-model.js';
import { SessionRegistry } from '../session/session-registry.js';
import { type DaemonLimits, resolveLimits } from './daemon-limits.js';
import { acquirePidLock, releasePidLock } from './daemon-lock.js';
import { HeapTrimmer } from './heap-trimmer.js';
import { StubRequestHandler } from './request-handler.js';
import { StubConnection } from './stub-connection.js';
import { StubInputLedgers } from './stub-input-ledgers.js';
import { TerminalIdAllocator } from './terminal-id-allocator.js';

export const DEFAULT_IDLE_EXIT_MS = 15 * 60 * 1000;
const SWEEP_INTERVAL_MS = 60 * 1000;
const SUPERSEDED_EXIT_DELAY_MS = 200;
/** The daemon's log line when the screen model worker was lost, per recovery. */
const MODEL_LOST_MESSAGES: Record<ModelRecovery, string> = {
  rebuild: 'screen model worker lost; each session model is rebuilt from its log in a new one',
  empty:
    'screen model worker lost again; each session model starts empty in a new one (it failed too often to rebuild)',
  none: 'screen model worker lost too often; session models stay closed (snapshots fail until the daemon restarts)',
};

/** Shutdown reason of a client's `daemonShutdown`: sessions end on purpose. */
const REQUESTED = 'requested';
/** Lost links' credit claims are checked this often (their grace is 30 s). */
const CREDIT_SWEEP_MS = 1000;

export interface DaemonOptions {
  runtimeDir: string;
  /**
   * Persistent state (survives reboots): the terminal id counter (`<stateDir>/ids`) and the
   * cold-restore records (`<stateDir>/restore`).
   */
  stateDir: string;
  idleExitMs?: number;
  ringBytes?: number;
  backgroundRingBytes?: number;
  scrollbackRows?: number;
  /** `--scrollback-idle-ms`: idle time after which a model drops its scrollback (0: never). */
  scrollbackIdleMs?: number;
  creditWindow?: number;
  creditWindowMax?: number;
  keepTailMin?: number;
  pendingCap?: number;
  buildId?: string;
  /** Agent send tuning (flags --agent-poll-ms, --agent-prompt-grace-ms, --agent-idle-ms, --max-read-bytes). */
  readiness?: Partial<ReadinessConfig>;
  /** Output history on disk (flags --history, --history-*-bytes, --history-free-percent, --tail-bytes). */
  history?: Partial<HistoryLimits>;
  /** `--palette`: the colours terminal colour queries are answered with (default DEFAULT_PALETTE). */
  palette?: TerminalPalette;
}

function log(msg: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ time: utcIsoTime(), pid: process.pid, msg, ...extra })}\n`);
}

/** sha256 of this bundle, so a relay can tell which build a running daemon is. */
export function ownBuildId(): string {
  try {
    return bundleBuildId(process.argv[1]);
  } catch {
    return 'unknown';
  }
}

/** What a daemon runs with once its limits are resolved and its runtime dir is its own. */
interface DaemonSetup {
  stateDir: string;
  /** The runtime dir (0700, checked): the socket, the lock, the shell integration scripts. */
  dir: string;
  buildId: string;
  socketPath: string;
  lockPath: string;
  idleExitMs: number;
  limits: DaemonLimits;
  historyLimits: HistoryLimits;
  readiness: ReadinessConfig;
  palette?: TerminalPalette;
}

/** The daemon's limits, the history's (its tail bounded by the ring) and the agent send tuning. */
function daemonLimits(opts: DaemonOptions) {
  const limits = resolveLimits(opts);
  // The tail is never larger than the ring a session would keep without a log.
  const historyLimits = resolveHistoryLimits({
    ...opts.history,
    tailBytes: opts.history?.tailBytes ?? Math.min(DEFAULT_TAIL_BYTES, limits.ringBytes),
  });
  if (historyLimits.tailBytes > limits.ringBytes)
    throw new RangeError(
      `--tail-bytes ${historyLimits.tailBytes} must not exceed --ring-bytes ${limits.ringBytes}`,
    );
  const readiness = resolveReadinessConfig(opts.readiness ?? {}, limits.ringBytes);
  return { limits, historyLimits, readiness };
}

/**
 * The per-user stub daemon: a Unix socket (0600 in a 0700 dir), many connections, the sessions,
 * and an idle exit when nothing has used it for a while. Returns at once when another daemon
 * already owns the runtime dir for this build.
 */
export async function runDaemon(opts: DaemonOptions): Promise<void> {
  const { limits, historyLimits, readiness } = daemonLimits(opts);
  const dir = opts.runtimeDir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A dir others can enter (or replace) would hand them the socket: refused, never chmodded.
  assertPrivateRuntime(dir);
  const buildId = opts.buildId ?? ownBuildId();
  const socketPath = daemonSocketPath(dir, buildId);
  const lockPath = daemonLockPath(dir, buildId);
  if (!acquirePidLock(lockPath) || (await socketAnswers(socketPath))) {
    log('another daemon owns this runtime dir; exiting', { dir });
    return;
  }
  try {
    unlinkSync(socketPath);
  } catch {
    // no stale socket
  }
  const idleExitMs = opts.idleExitMs ?? DEFAULT_IDLE_EXIT_MS;
  const daemon = new StubDaemon({
    stateDir: opts.stateDir,
    dir,
    buildId,
    socketPath,
    lockPath,
    idleExitMs,
    limits,
    historyLimits,
    readiness,
    ...(opts.palette ? { palette: opts.palette } : {}),
  });
  await daemon.listen();
}

/**
 * A running daemon once it holds its lock: the sessions (with cold restore, the output logs and
 * the screen model worker), the connections on its socket, the periodic sweeps, and its exit
 * (asked for, on a signal, when idle, or with its last session once a newer build took over).
 */
class StubDaemon {
  private readonly startedAt = Date.now();
  private readonly model = new ScreenModelHost();
  private readonly trimmer: HeapTrimmer;
  private readonly connections = new Set<StubConnection>();
  private readonly coldRestore: ColdRestoreService | undefined;
  private readonly history: HistoryStore;
  private readonly registry: SessionRegistry;
  private readonly handler: StubRequestHandler;
  private readonly inputs = new StubInputLedgers();
  /** Code navigation: language servers run as this daemon's children, stopped with it. */
  private readonly lsp = new LspService(log);
  private idleTimer: NodeJS.Timeout | undefined;
  private server: Server | undefined;
  /** Set once a relay of a newer build treats this daemon as legacy: it exits with its last session. */
  private superseded = false;

  constructor(private readonly setup: DaemonSetup) {
    const trimAddon = heapTrimAddon();
    if (trimAddon.problem) log('heap trimming off', { reason: trimAddon.problem });
    this.model.onLost((why, recovery) => {
      const sessions = this.registry.list();
      // Sessions whose log failed cannot be rebuilt: their models start empty whatever the recovery.
      const withoutLog = sessions.filter((s) => !s.history.logging).length;
      log(MODEL_LOST_MESSAGES[recovery], { why, recovery, sessions: sessions.length, withoutLog });
    });
    const { addon } = trimAddon;
    this.trimmer = new HeapTrimmer({ trim: addon && trimOnPool(addon), log });
    const ids = new TerminalIdAllocator(join(setup.stateDir, 'ids'), `${setup.buildId} ${process.pid}`, log);
    // Cold restore first: the history store's sweep keeps the logs its records still need.
    const coldRestore = ColdRestoreService.open({
      stateDir: setup.stateDir,
      runtimeDir: setup.dir,
      sessions: () => this.registry.list(),
      log,
    });
    this.coldRestore = coldRestore;
    this.history = new HistoryStore(
      setup.stateDir,
      setup.historyLimits,
      log,
      (owner, id) => coldRestore?.needsLog(owner, id) ?? false,
    );
    // Attaches of restored terminals wait for it; nothing else does.
    void coldRestore?.restoreFromLogs();
    this.registry = this.sessionRegistry(() => ids.next());
    this.handler = new StubRequestHandler(
      this.registry,
      { info: () => this.info(), shutdown: () => void this.shutdown(REQUESTED) },
      new AgentRequests(setup.readiness),
      coldRestore,
      this.lsp,
    );
  }

  private sessionRegistry(mintId: () => string): SessionRegistry {
    const { limits, historyLimits } = this.setup;
    const coldRestore = this.coldRestore;
    return new SessionRegistry(
      this.model,
      {
        ringBytes: limits.ringBytes,
        backgroundRingBytes: limits.backgroundRingBytes,
        scrollbackRows: limits.scrollbackRows,
        scrollbackIdleMs: limits.scrollbackIdleMs,
        creditWindow: limits.creditWindow,
        creditWindowMax: limits.creditWindowMax,
        tailBytes: historyLimits.tailBytes,
        logBytes: historyLimits.sessionBytes,
        // A roll drops whole segments until a new one fits: what remains can be two segments short.
        logKeepsBytes: historyLimits.sessionBytes - 2 * historyLimits.segmentBytes,
        ...(this.setup.palette ? { palette: this.setup.palette } : {}),
      },
      join(this.setup.dir, 'shell'),
      () => this.armIdle(),
      mintId,
      this.history,
      {
        spawned: (s) => coldRestore?.track(s),
        removed: (s) => coldRestore?.forget(s.id),
        isReserved: (id) => coldRestore?.isReserved(id) ?? false,
        aliasHolder: (alias) => coldRestore?.aliasHolder(alias),
      },
    );
  }

  /** The `daemonInfo` answer. */
  private info() {
    return {
      pid: process.pid,
      buildId: this.setup.buildId,
      protocol: STUB_PROTOCOL_VERSION,
      sessions: this.registry.aliveCount,
      connections: this.connections.size,
      startedAt: this.startedAt,
      rss: process.memoryUsage.rss(),
      heapTrim: this.trimmer.stats(),
    };
  }

  /** Listens on the socket, then starts the sweeps, the signal handlers and the idle countdown. */
  async listen(): Promise<void> {
    const { socketPath, buildId } = this.setup;
    const server = createServer((socket) => this.accept(socket));
    this.server = server;
    // Created 0600 (no window where another uid could connect), and checked like a client checks it.
    const oldMask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => resolve());
      });
    } finally {
      process.umask(oldMask);
    }
    chmodSync(socketPath, 0o600);
    assertPrivateRuntime(this.setup.dir, socketPath);
    this.startSweeps();
    process.on('SIGTERM', () => void this.shutdown('SIGTERM'));
    process.on('SIGINT', () => void this.shutdown('SIGINT'));
    // Session exits do not call back here; a periodic check notices the last one ending.
    setInterval(() => this.armIdle(), Math.min(this.setup.idleExitMs, SWEEP_INTERVAL_MS)).unref();
    this.trimmer.start();
    log('daemon listening', { socketPath, buildId, protocol: STUB_PROTOCOL_VERSION });
    this.armIdle();
  }

  private accept(socket: Socket): void {
    const conn = new StubConnection(socket, {
      buildId: this.setup.buildId,
      handler: this.handler,
      inputs: this.inputs,
      keepTailMin: this.setup.limits.keepTailMin,
      pendingCap: this.setup.limits.pendingCap,
      totalBuffered: () => {
        let n = 0;
        for (const c of this.connections) n += c.buffered;
        return n;
      },
      log,
      onSuperseded: () => {
        this.superseded = true;
        log('a relay of another build uses this daemon as legacy');
      },
      onClose: (c) => {
        this.connections.delete(c);
        this.armIdle();
      },
    });
    this.connections.add(conn);
    this.armIdle();
  }

  private startSweeps(): void {
    setInterval(() => {
      this.registry.sweep();
      this.coldRestore?.sweep();
    }, SWEEP_INTERVAL_MS).unref();
    setInterval(() => {
      const now = Date.now();
      for (const s of this.registry.list()) {
        s.credits.sweep(now);
        // A dropped link whose claim just ended no longer needs the full ring.
        s.refreshRingLimit();
        if (s.sweepModel(now)) log('model scrollback dropped', { id: s.id });
      }
    }, CREDIT_SWEEP_MS).unref();
  }

  /** Starts the idle countdown when nothing is alive and nobody is connected; cancels it otherwise. */
  private armIdle(): void {
    const { registry, connections } = this;
    if (this.superseded && registry.aliveCount === 0) {
      // Let the reply to the request that ended the last session go out first.
      setTimeout(() => {
        if (registry.aliveCount === 0) void this.shutdown('superseded by a newer build; last session ended');
      }, SUPERSEDED_EXIT_DELAY_MS);
      return;
    }
    const busy = registry.aliveCount > 0 || connections.size > 0;
    if (busy) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    } else if (!this.idleTimer) {
      this.idleTimer = setTimeout(() => {
        this.idleTimer = undefined;
        if (registry.aliveCount === 0 && connections.size === 0) void this.shutdown('idle');
        else this.armIdle();
      }, this.setup.idleExitMs);
    }
  }

  private async shutdown(reason: string): Promise<void> {
    log('daemon exiting', { reason });
    clearTimeout(this.idleTimer);
    this.trimmer.stop();
    this.server?.close();
    // Asked to stop: every link hears so and does not start a new daemon in this one's place.
    if (reason === REQUESTED) await Promise.all([...this.connections].map((c) => c.stopping()));
    else for (const c of this.connections) c.close();
    await Promise.all([this.registry.shutdownAll(), this.lsp.dispose()]);
    // Asked to end its sessions: they ended cleanly and leave no record. Otherwise (SIGTERM at a
    // reboot, idle) the final saves stay for a cold restore.
    if (reason === REQUESTED) await this.coldRestore?.discard(this.registry.list().map((s) => s.id));
    else await this.coldRestore?.stop();
    this.history.dispose();
    releasePidLock(this.setup.lockPath);
    try {
      unlinkSync(this.setup.socketPath);
    } catch {
      // already gone
    }
    await this.model.dispose();
    process.exit(0);
  }
}
