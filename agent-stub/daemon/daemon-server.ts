import { chmodSync, mkdirSync, unlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { socketAnswers } from '../../provider/daemon-runtime/daemon-launcher.js';
import { assertPrivateRuntime } from '../../provider/daemon-runtime/private-dir.js';
import { bundleBuildId, daemonLockPath, daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { type ReadinessConfig, resolveReadinessConfig } from '../../provider/readiness-config.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { DEFAULT_TAIL_BYTES, type HistoryLimits, resolveHistoryLimits } from '../history/history-limits.js';
import { HistoryStore } from '../history/history-store.js';
import { heapTrimAddon, trimOnPool } from '../native/heap-trim.js';
import { AgentRequests } from '../readiness/agent-requests.js';
import { ColdRestoreService } from '../restore/cold-restore.js';
import { ScreenModelHost } from '../session/screen-model.js';
import { SessionRegistry } from '../session/session-registry.js';
import { resolveLimits } from './daemon-limits.js';
import { acquirePidLock, releasePidLock } from './daemon-lock.js';
import { HeapTrimmer } from './heap-trimmer.js';
import { StubRequestHandler } from './request-handler.js';
import { StubConnection } from './stub-connection.js';
import { TerminalIdAllocator } from './terminal-id-allocator.js';

export const DEFAULT_IDLE_EXIT_MS = 15 * 60 * 1000;
const SWEEP_INTERVAL_MS = 60 * 1000;
const SUPERSEDED_EXIT_DELAY_MS = 200;
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
}

function log(msg: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(
    `${JSON.stringify({ time: new Date().toISOString(), pid: process.pid, msg, ...extra })}\n`,
  );
}

/** sha256 of this bundle, so a relay can tell which build a running daemon is. */
export function ownBuildId(): string {
  try {
    return bundleBuildId(process.argv[1]);
  } catch {
    return 'unknown';
  }
}

/**
 * The per-user stub daemon: a Unix socket (0600 in a 0700 dir), many connections, the sessions,
 * and an idle exit when nothing has used it for a while.
 */
export async function runDaemon(opts: DaemonOptions): Promise<void> {
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
  const startedAt = Date.now();
  const model = new ScreenModelHost();
  const trimAddon = heapTrimAddon();
  if (trimAddon.problem) log('heap trimming off', { reason: trimAddon.problem });
  const { addon } = trimAddon;
  const trimmer = new HeapTrimmer({ trim: addon && trimOnPool(addon), log });
  const connections = new Set<StubConnection>();
  let idleTimer: NodeJS.Timeout | undefined;
  let server: Server | undefined;
  const ids = new TerminalIdAllocator(join(opts.stateDir, 'ids'), `${buildId} ${process.pid}`, log);
  // Cold restore first: the history store's sweep keeps the logs its records still need.
  const coldRestore = ColdRestoreService.open({
    stateDir: opts.stateDir,
    runtimeDir: dir,
    sessions: () => registry.list(),
    log,
  });
  const history = new HistoryStore(
    opts.stateDir,
    historyLimits,
    log,
    (owner, id) => coldRestore?.needsLog(owner, id) ?? false,
  );
  // Attaches of restored terminals wait for it; nothing else does.
  void coldRestore?.restoreFromLogs();

  const registry = new SessionRegistry(
    model,
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
    },
    join(dir, 'shell'),
    () => armIdle(),
    () => ids.next(),
    history,
    {
      spawned: (s) => coldRestore?.track(s),
      removed: (s) => coldRestore?.forget(s.id),
      isReserved: (id) => coldRestore?.isReserved(id) ?? false,
      aliasHolder: (alias) => coldRestore?.aliasHolder(alias),
    },
  );

  const shutdown = async (reason: string) => {
    log('daemon exiting', { reason });
    clearTimeout(idleTimer);
    trimmer.stop();
    server?.close();
    for (const c of connections) c.close();
    await registry.shutdownAll();
    // Asked to end its sessions: they ended cleanly and leave no record. Otherwise (SIGTERM at a
    // reboot, idle) the final saves stay for a cold restore.
    if (reason === REQUESTED) await coldRestore?.discard(registry.list().map((s) => s.id));
    else await coldRestore?.stop();
    history.dispose();
    releasePidLock(lockPath);
    try {
      unlinkSync(socketPath);
    } catch {
      // already gone
    }
    await model.dispose();
    process.exit(0);
  };

  /** Set once a relay of a newer build treats this daemon as legacy: it exits with its last session. */
  let superseded = false;

  /** Starts the idle countdown when nothing is alive and nobody is connected; cancels it otherwise. */
  function armIdle(): void {
    if (superseded && registry.aliveCount === 0) {
      // Let the reply to the request that ended the last session go out first.
      setTimeout(() => {
        if (registry.aliveCount === 0) void shutdown('superseded by a newer build; last session ended');
      }, SUPERSEDED_EXIT_DELAY_MS);
      return;
    }
    const busy = registry.aliveCount > 0 || connections.size > 0;
    if (busy) {
      clearTimeout(idleTimer);
      idleTimer = undefined;
    } else if (!idleTimer) {
      idleTimer = setTimeout(() => {
        idleTimer = undefined;
        if (registry.aliveCount === 0 && connections.size === 0) void shutdown('idle');
        else armIdle();
      }, idleExitMs);
    }
  }

  const handler = new StubRequestHandler(
    registry,
    {
      info: () => ({
        pid: process.pid,
        buildId,
        protocol: STUB_PROTOCOL_VERSION,
        sessions: registry.aliveCount,
        connections: connections.size,
        startedAt,
        rss: process.memoryUsage.rss(),
        heapTrim: trimmer.stats(),
      }),
      shutdown: () => void shutdown(REQUESTED),
    },
    new AgentRequests(readiness),
    coldRestore,
  );
  const inputLedger = new Map<string, number>();

  server = createServer((socket) => {
    const conn = new StubConnection(socket, {
      buildId,
      handler,
      inputLedger,
      keepTailMin: limits.keepTailMin,
      pendingCap: limits.pendingCap,
      totalBuffered: () => {
        let n = 0;
        for (const c of connections) n += c.buffered;
        return n;
      },
      log,
      onSuperseded: () => {
        superseded = true;
        log('a relay of another build uses this daemon as legacy');
      },
      onClose: (c) => {
        connections.delete(c);
        armIdle();
      },
    });
    connections.add(conn);
    armIdle();
  });
  // Created 0600 (no window where another uid could connect), and checked like a client checks it.
  const oldMask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(socketPath, () => resolve());
    });
  } finally {
    process.umask(oldMask);
  }
  chmodSync(socketPath, 0o600);
  assertPrivateRuntime(dir, socketPath);
  setInterval(() => {
    registry.sweep();
    coldRestore?.sweep();
  }, SWEEP_INTERVAL_MS).unref();
  setInterval(() => {
    const now = Date.now();
    for (const s of registry.list()) {
      s.credits.sweep(now);
      // A dropped link whose claim just ended no longer needs the full ring.
      s.refreshRingLimit();
      if (s.sweepModel(now)) log('model scrollback dropped', { id: s.id });
    }
  }, CREDIT_SWEEP_MS).unref();
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  // Session exits do not call back here; a periodic check notices the last one ending.
  setInterval(() => armIdle(), Math.min(idleExitMs, SWEEP_INTERVAL_MS)).unref();
  trimmer.start();
  log('daemon listening', { socketPath, buildId, protocol: STUB_PROTOCOL_VERSION });
  armIdle();
}
