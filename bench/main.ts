/**
 * ptyrelay benchmarks against OpenSSH on one loopback sshd. Every scenario measures ptyrelay and
 * its reference in the same run, so the ratios hold on a noisy machine.
 *   npm run bench                 full run (~5–10 min)
 *   npm run bench -- --quick      under two minutes
 *   npm run bench -- --only flood,typing
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { createLogger } from '../relay/core/log.js';
import { packageRoot, stubBundlePath } from '../relay/core/stub-bundle.js';
import type { SshPtyProvider } from '../relay/ssh/ssh-pty-provider.js';
import { startSshd } from '../test/support/sshd.js';
import { type BenchEnv, type BenchOptions, hostConfig, makeDirs, sshProvider } from './lib/env.js';
import { renderSvg, renderTable, type ScenarioResult } from './lib/results.js';
import {
  busyPercent,
  cleanupRuntimeDir,
  cpuByPid,
  machineCpu,
  machineInfo,
  now,
  othersCpuPercent,
  procComm,
  round,
  sleep,
  withTimeout,
} from './lib/util.js';
import { floodScenario } from './scenarios/flood.js';
import { historyScenario } from './scenarios/history.js';
import { idleMemoryScenario } from './scenarios/idle-memory.js';
import { listingScenario } from './scenarios/listing.js';
import { memoryScenario } from './scenarios/memory.js';
import { queriesScenario } from './scenarios/queries.js';
import { reconnectScenario } from './scenarios/reconnect.js';
import { scaleScenario } from './scenarios/scale.js';
import { slowClientsScenario } from './scenarios/slow-clients.js';
import { snapshotScenario } from './scenarios/snapshot.js';
import { typingScenario } from './scenarios/typing.js';
import { typingHopScenario } from './scenarios/typing-hop.js';
import { webEchoScenario } from './scenarios/web-echo.js';

// Memory first: the relay's RSS is this process's, and later scenarios leave their heap behind.
const SCENARIOS = [
  'idle-memory',
  'memory',
  'flood',
  'typing',
  'typing-hop',
  'reconnect',
  'scale',
  'snapshot',
  'queries',
  'listing',
  'slow-clients',
  'web',
  'history',
] as const;
/** A scenario that runs longer than this is abandoned (its figures are missing, the run goes on). */
const SCENARIO_TIMEOUT_MS = { quick: 90_000, full: 480_000 };
/** Scenarios that wait out idle timers on purpose (history: two 35 s idle waits) get longer. */
const SCENARIO_TIMEOUT_OVERRIDE_MS: Partial<Record<string, { quick: number; full: number }>> = {
  history: { quick: 300_000, full: 900_000 },
};

function positiveInt(flag: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} takes a positive integer, got ${v}`);
  return n;
}

function parseArgs(argv: string[]): BenchOptions {
  const opts: BenchOptions = { quick: false, outDir: join(packageRoot(), 'bench') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') opts.quick = true;
    else if (a === '--only') opts.only = new Set(argv[++i]?.split(',') ?? []);
    else if (a === '--out') opts.outDir = argv[++i] ?? opts.outDir;
    else if (a === '--flood-variants') opts.floodVariants = new Set(argv[++i]?.split(',') ?? []);
    else if (a === '--profile-stub') opts.profileStubDir = argv[++i];
    else if (a === '--flood-rounds') opts.floodRounds = positiveInt(a, argv[++i]);
    else if (a === '--flood-mb') opts.floodMb = positiveInt(a, argv[++i]);
    else
      throw new Error(
        `unknown argument ${a} (use --quick, --only a,b, --out DIR, --flood-variants ssh,ssh-aa,ssh-provider,node-pty,local-provider,relay-client,floor-local,floor-ssh,floor-ssh2,ssh2-pty, --flood-rounds N, --flood-mb N, --profile-stub DIR)`,
      );
  }
  for (const s of opts.only ?? []) {
    if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}`);
  }
  return opts;
}

/** Other work on the machine above this share of all cores makes the figures noisy. */
const QUIET_BUSY_PERCENT = 15;
/** Total time a run may wait for a quiet machine before its scenarios (quick runs must stay under 2 min). */
const QUIET_WAIT_BUDGET_MS = { quick: 10_000, full: 120_000 };

/** CPU busy on the whole machine over `ms` while the bench itself idles (others' work). */
async function backgroundBusy(ms = 1000): Promise<number> {
  const a = machineCpu();
  await sleep(ms);
  return busyPercent(a, machineCpu());
}

/** The node binary the SSH host's daemon runs. */
function daemonNode(provider: SshPtyProvider): string {
  const pid = provider.linkInfo('h')?.daemonPid;
  try {
    return pid ? readlinkSync(`/proc/${pid}/exe`) : 'an unknown node (no daemon pid)';
  } catch {
    return 'an unknown node (its process is gone)';
  }
}

/** Ends the host's daemon so the next scenario starts with a fresh one (no memory carried over). */
async function freshDaemon(provider: SshPtyProvider): Promise<void> {
  const pid = provider.linkInfo('h')?.daemonPid;
  await withTimeout(provider.shutdownDaemon('h'), 15_000, 'daemon shutdown').catch(() => {});
  const deadline = now() + 10_000;
  while (pid && procComm(pid) !== undefined && now() < deadline) await sleep(50);
}

const sha12 = (file: string): string =>
  createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 12);

function progress(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

export async function main(argv: string[]): Promise<number> {
  const opts = parseArgs(argv);
  const started = now();
  const machine = machineInfo(packageRoot());
  const warnings: string[] = [];
  // Others may rebuild dist/ while the bench runs; the stub deployed to the host follows it.
  const stubShaAtStart = sha12(stubBundlePath());
  const dirs = makeDirs();
  progress(
    `${opts.quick ? 'quick' : 'full'} run on ${machine.cpuModel} × ${machine.cores}, node ${machine.node}`,
  );
  // The host finds node on its PATH: the bench's own, so that the daemon on the SSH host runs the
  // same Node line as the local one and the relay (the system's node may be another line).
  const sshd = await startSshd({
    extraConfig: [`SetEnv PATH=${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`],
  });
  const env: BenchEnv = {
    opts,
    sshd,
    dataDir: dirs.dataDir,
    relayHome: dirs.relayHome,
    localRoot: dirs.localRoot,
    runtimeDir: `/tmp/ptr-bench-${process.pid}`,
    ownPids: new Set<number>(),
    log: createLogger({ level: process.env.PTYRELAY_LOG_LEVEL ?? 'silent', name: 'bench' }),
  };
  // First contact, step by step (the provider reports connect, probe, check, done, link).
  const firstContactSteps: Record<string, number> = {};
  let tFirst = now();
  const provider = sshProvider(
    env,
    { h: hostConfig(sshd) },
    {
      onProgress: (_h, p) => {
        const key = p.step === 'probe' && firstContactSteps.probe !== undefined ? 'probed' : p.step;
        firstContactSteps[key] ??= round(now() - tFirst, 1);
      },
    },
  );
  const results: ScenarioResult[] = [];
  let firstContactMs: number | undefined;
  try {
    tFirst = now();
    await provider.listProcesses();
    firstContactMs = round(now() - tFirst, 1);
    progress(
      `sshd on port ${sshd.port}; first contact (connect + deploy check + daemon) ${firstContactMs} ms`,
    );
    const hostNode = daemonNode(provider);
    if (hostNode !== realpathSync(process.execPath))
      warnings.push(`the SSH host's daemon runs ${hostNode}, not the bench's node ${process.execPath}`);
    const run: Record<(typeof SCENARIOS)[number], () => Promise<ScenarioResult>> = {
      flood: () => floodScenario(env, provider),
      typing: () => typingScenario(env, provider),
      'typing-hop': () => typingHopScenario(env),
      reconnect: () => reconnectScenario(env, provider),
      'idle-memory': () => idleMemoryScenario(env),
      memory: () => memoryScenario(env, provider, () => freshDaemon(provider)),
      scale: () => scaleScenario(env, provider),
      snapshot: () => snapshotScenario(env, provider),
      queries: () => queriesScenario(env, provider),
      listing: () => listingScenario(env),
      'slow-clients': () => slowClientsScenario(env),
      web: () => webEchoScenario(env),
      history: () => historyScenario(env),
    };
    let waitBudget = QUIET_WAIT_BUDGET_MS[opts.quick ? 'quick' : 'full'];
    for (const name of SCENARIOS) {
      if (opts.only && !opts.only.has(name)) continue;
      let busy = await backgroundBusy();
      const w0 = now();
      while (busy > QUIET_BUSY_PERCENT && now() - w0 < waitBudget) {
        if (now() - w0 < 1500)
          progress(`machine busy (${busy}% of all cores used by others); waiting for quiet…`);
        busy = await backgroundBusy(2000);
      }
      waitBudget -= now() - w0;
      progress(`${name}… (background load ${busy}%)`);
      const t1 = now();
      const procs0 = cpuByPid();
      try {
        const limit = (SCENARIO_TIMEOUT_OVERRIDE_MS[name] ?? SCENARIO_TIMEOUT_MS)[
          opts.quick ? 'quick' : 'full'
        ];
        const r = await withTimeout(run[name](), limit, `scenario ${name}`);
        const others = othersCpuPercent(
          procs0,
          cpuByPid(),
          now() - t1,
          [sshd.pid, ...env.ownPids],
          [env.runtimeDir, env.localRoot],
        );
        r.details = {
          backgroundBusyPercentBefore: busy,
          othersCpuPercentDuring: others.percent,
          othersTopCommands: others.top,
          ...r.details,
        };
        if (others.percent > 20)
          progress(
            `  note: other processes used ${others.percent}% of a core meanwhile (${JSON.stringify(others.top)})`,
          );
        results.push(r);
        progress(
          `${name} done in ${(r.durationMs / 1000).toFixed(1)} s${r.errors.length ? ` (${r.errors.length} errors)` : ''}`,
        );
        for (const e of r.errors) progress(`  ${name}: ${e}`);
      } catch (err) {
        const msg = (err as Error).stack ?? String(err);
        progress(`${name} failed: ${msg}`);
        results.push({ name, rows: [], details: {}, errors: [msg], durationMs: now() - t1 });
      }
      await freshDaemon(provider);
    }
  } finally {
    await provider.shutdownDaemon('h').catch(() => {});
    await provider.dispose();
    // The flood's A/B runs the old batcher's daemon in a runtime dir of its own.
    for (const dir of [env.runtimeDir, `${env.runtimeDir}-timer`]) {
      const leftover = await cleanupRuntimeDir(dir);
      if (leftover.length > 0) warnings.push(`ended ${leftover.length} daemon(s) left in ${dir}`);
    }
    await sshd.stop();
    dirs.cleanup();
  }
  const stubShaAtEnd = sha12(stubBundlePath());
  if (stubShaAtEnd !== stubShaAtStart) {
    warnings.push(
      `dist/stub/stub.cjs changed during the run (${stubShaAtStart} → ${stubShaAtEnd}): later scenarios deployed another build`,
    );
  }
  for (const w of warnings) progress(`warning: ${w}`);

  const rows = results.flatMap((r) => r.rows);
  const totalMs = now() - started;
  const title = `ptyrelay vs OpenSSH — ${opts.quick ? 'quick' : 'full'} run, ${machine.cpuModel} × ${machine.cores}, ${machine.gitCommit.slice(0, 10)}`;
  const report = {
    mode: opts.quick ? 'quick' : 'full',
    startedAt: new Date(Date.now() - totalMs).toISOString(),
    durationMs: round(totalMs, 0),
    machine: { ...machine, loadAvgAtEnd: os.loadavg().map((v) => round(v, 2)) },
    /** sha256 (12 hex) of the dist/stub/stub.cjs this run deployed. */
    stubBundleSha12: stubShaAtStart,
    warnings,
    firstContactMs,
    /** ms since the start of first contact at which each step was reported. */
    firstContactSteps,
    rows,
    scenarios: Object.fromEntries(
      results.map((r) => [r.name, { durationMs: round(r.durationMs, 0), errors: r.errors, ...r.details }]),
    ),
  };
  mkdirSync(opts.outDir, { recursive: true });
  writeFileSync(join(opts.outDir, 'results.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(opts.outDir, 'results.svg'), renderSvg(rows, title));
  // The same table as Markdown, for docs/benchmarks.md (bench/out is not committed).
  mkdirSync(join(opts.outDir, 'out'), { recursive: true });
  writeFileSync(join(opts.outDir, 'out', 'results-table.md'), `${renderTable(rows, 'markdown')}\n`);
  process.stdout.write(`\n${renderTable(rows, 'text')}\n\n`);
  process.stdout.write(
    `machine: ${machine.cpuModel} × ${machine.cores}, ${(machine.memTotalBytes / 2 ** 30).toFixed(1)} GiB, node ${machine.node}, ${machine.openssh}, commit ${machine.gitCommit.slice(0, 10)}${machine.gitDirty ? ' (dirty)' : ''}\n`,
  );
  process.stdout.write(
    `wrote ${join(opts.outDir, 'results.json')} and results.svg in ${(totalMs / 1000).toFixed(0)} s\n`,
  );
  return results.some((r) => r.errors.length > 0) || warnings.length > 0 ? 1 : 0;
}
