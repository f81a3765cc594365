import { createHash, type Hash } from 'node:crypto';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import * as pty from 'node-pty';
import type { Client } from 'ssh2';
import type { IPtyProvider } from '../../provider/contract.js';
import { shellJoin, shellQuote } from '../../relay/deploy/shell-quote.js';
import { resolveHost } from '../../relay/ssh/host-config.js';
import { connectSsh } from '../../relay/ssh/host-connection.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { writeBareForwarder } from '../lib/bare-forwarder.js';
import { type BenchEnv, hostConfig, localProvider, sshArgs } from '../lib/env.js';
import { expectedPrefixSha256, type FloodFile, generateFloodFile } from '../lib/flood-file.js';
import { runCommandStream, runProviderStream, type StreamStats } from '../lib/pty-run.js';
import { startBenchRelay } from '../lib/relay.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { runSsh2ExecStream } from '../lib/ssh2-exec-stream.js';
import {
  descendants,
  machineCpu,
  median,
  now,
  procComm,
  procCpuMs,
  round,
  settleMachine,
} from '../lib/util.js';

interface FloodRun {
  variant: string;
  bytes: number;
  /** Expected minus received: output the consumer never got (lost at the program's exit). */
  missingBytes: number;
  /** First byte to last byte. */
  streamMs: number;
  /** Start (spawn) to last byte. */
  totalMs: number;
  mbPerSec: number;
  complete: boolean;
  sha256Ok?: boolean;
  /** When the total differs: whether what arrived is an exact prefix of the expected stream. */
  exactPrefix?: boolean;
  gaps: number;
  /** Data events the consumer got per MB: how finely the output was cut on its way (frames, packets). */
  eventsPerMb?: number;
  /** SSH channel packets per MB the relay received and writes it made (acknowledgements), SSH variants. */
  packetsPerMb?: { received: number; sent: number };
  cpuMs?: Record<string, number>;
  /** CPU the whole machine used (all processes, kernel included) per MB delivered: the run's total cost. */
  machineCpuMsPerMb?: number;
  /** CPU this process (the bench: the consumer, and ssh2 or node-pty where they read here) used per MB. */
  benchCpuMsPerMb?: number;
  /** Full (mark-compact) and young-generation collections of this process during the run. */
  benchGcs?: { major: number; minor: number; ms: number };
  /** How long the machine stayed busy before this run started (work left over by the previous one). */
  settleMs?: number;
}

/** Counts this process's garbage collections until `stop()`. */
function countGcs(): { stop(): { major: number; minor: number; ms: number } } {
  const n = { major: 0, minor: 0, ms: 0 };
  const count = (entries: PerformanceEntry[]) => {
    for (const e of entries) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) n.major++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) n.minor++;
      n.ms += e.duration;
    }
  };
  const obs = new PerformanceObserver((list) => count(list.getEntries()));
  obs.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      // Entries not delivered yet (the observer's callback runs later) are counted too.
      count(obs.takeRecords());
      obs.disconnect();
      return { ...n, ms: round(n.ms, 0) };
    },
  };
}

/** A second `ssh -tt` in each round: OpenSSH against itself, the run's A/A spread. */
const SSH_AA = 'ssh -tt (A/A)';
/**
 * The floors (bare-forwarder.ts): a bare node process reading the PTY, read locally and over SSH.
 * What any design with a Node process on the PTY costs before it does anything of its own.
 */
const FLOOR_LOCAL = 'bare node forwarder';
const FLOOR_SSH = 'bare node forwarder over ssh';
const FLOOR_SSH2 = 'bare node forwarder over ssh2';
/** `cat` in a PTY of sshd's, as `ssh -tt` runs it, read through ssh2 in this process. */
const SSH2_PTY = 'ssh2 PTY channel';
/** Variants whose lost tail at exit is node-pty's (libuv EOF on POLLHUP), not a failure of the run. */
const NODE_PTY_READERS = new Set(['node-pty local', FLOOR_LOCAL, FLOOR_SSH, FLOOR_SSH2]);
/** Flood target: each provider at least this share of its reference, medians of the same run. */
const FLOOD_TARGET_RATIO = 0.9;

function toRun(variant: string, s: StreamStats, file: FloodFile, hash: Hash | undefined): FloodRun {
  const streamMs = s.tLast - s.tFirst;
  const run: FloodRun = {
    variant,
    bytes: s.bytes,
    missingBytes: file.expectedBytes - s.bytes,
    streamMs: round(streamMs, 1),
    totalMs: round(s.tLast - s.t0, 1),
    mbPerSec: round(s.bytes / 1e6 / (streamMs / 1000), 2),
    complete: s.bytes === file.expectedBytes,
    gaps: s.gaps,
  };
  if (hash) {
    const got = hash.digest('hex');
    run.sha256Ok = got === file.expectedSha256;
    if (!run.sha256Ok && s.bytes < file.expectedBytes) {
      run.exactPrefix = got === expectedPrefixSha256(file, s.bytes);
    }
  }
  return run;
}

const timeoutFor = (file: FloodFile) => 60_000 + file.expectedBytes / 2e3;

async function viaProvider(
  variant: string,
  p: IPtyProvider,
  host: string | undefined,
  file: FloodFile,
  verify: boolean,
): Promise<FloodRun> {
  const hash = verify ? createHash('sha256') : undefined;
  let events = 0;
  const s = await runProviderStream(
    p,
    { host, cols: 80, rows: 24, command: 'cat', args: [file.path] },
    (c) => {
      events++;
      hash?.update(c);
    },
    (st) => st.bytes >= file.expectedBytes,
    timeoutFor(file),
  );
  await p.shutdown(s.id, { immediate: true }).catch(() => {});
  const run = toRun(variant, s, file, hash);
  run.eventsPerMb = round(events / (s.bytes / 1e6), 1);
  return run;
}

function viaNodePty(file: FloodFile, verify: boolean): Promise<FloodRun> {
  const hash = verify ? createHash('sha256') : undefined;
  return new Promise((resolve, reject) => {
    const s: StreamStats = { bytes: 0, t0: now(), tFirst: 0, tLast: 0, gaps: 0 };
    const proc = pty.spawn('cat', [file.path], {
      name: 'xterm-256color',
      cols: 80,
      rows: 24,
      cwd: '/',
      env: process.env as Record<string, string>,
      encoding: null,
    } as pty.IPtyForkOptions);
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(toRun('node-pty local', s, file, hash));
    };
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      if (!settled) reject(new Error('local node-pty flood timed out'));
      settled = true;
    }, timeoutFor(file));
    proc.onData((d) => {
      const c = d as unknown as Buffer;
      const t = now();
      if (s.bytes === 0) s.tFirst = t;
      s.tLast = t;
      s.bytes += c.length;
      hash?.update(c);
      if (s.bytes >= file.expectedBytes) finish();
    });
    proc.onExit(() => setTimeout(finish, 1000));
  });
}

/** A flood read from a local command's stdout: the OpenSSH client, or a floor's forwarder. */
async function viaCommand(
  variant: string,
  command: string,
  args: string[],
  file: FloodFile,
  verify: boolean,
): Promise<FloodRun> {
  const hash = verify ? createHash('sha256') : undefined;
  const s = await runCommandStream(command, args, (c) => hash?.update(c), timeoutFor(file));
  if (s.exitCode !== 0) throw new Error(`${variant}: ${command} exited ${s.exitCode}: ${s.stderr}`);
  return toRun(variant, s, file, hash);
}

async function viaSsh2(
  variant: string,
  client: Client,
  command: string,
  pty: boolean,
  file: FloodFile,
  verify: boolean,
): Promise<FloodRun> {
  const hash = verify ? createHash('sha256') : undefined;
  const s = await runSsh2ExecStream(client, command, pty, (c) => hash?.update(c), timeoutFor(file));
  if (s.exitCode !== 0) throw new Error(`${variant}: ${command} exited ${s.exitCode}`);
  return toRun(variant, s, file, hash);
}

const viaSsh = (env: BenchEnv, file: FloodFile, verify: boolean) =>
  viaCommand('ssh -tt', 'ssh', [...sshArgs(env.sshd), 'cat', file.path], file, verify);

/** CPU time (ms) of the relay, the host's daemon and (per pid) the sshd processes serving this connection. */
function cpuSnapshot(
  env: BenchEnv,
  daemonPid: number | undefined,
): { relay: number; daemon: number; sshd: Map<number, number> } {
  const cpu = process.cpuUsage();
  const sshd = new Map<number, number>();
  for (const p of descendants(env.sshd.pid)) {
    const ms = procComm(p)?.startsWith('sshd') ? procCpuMs(p) : undefined;
    if (ms !== undefined) sshd.set(p, ms);
  }
  return { relay: (cpu.user + cpu.system) / 1000, daemon: (daemonPid && procCpuMs(daemonPid)) || 0, sshd };
}

/** CPU used between two snapshots; sshd counts only processes alive in both (the connection's). */
function cpuDelta(
  a: ReturnType<typeof cpuSnapshot>,
  b: ReturnType<typeof cpuSnapshot>,
): Record<string, number> {
  let sshd = 0;
  for (const [pid, ms] of b.sshd) if (a.sshd.has(pid)) sshd += ms - a.sshd.get(pid)!;
  return { relay: round(b.relay - a.relay, 0), daemon: round(b.daemon - a.daemon, 0), sshd: round(sshd, 0) };
}

type Packets = { sent: number; received: number } | undefined;

/** Packets per MB between two readings of a link's counters. */
function packetRates(a: Packets, b: Packets, bytes: number): FloodRun['packetsPerMb'] {
  if (!a || !b || bytes === 0) return undefined;
  const mb = bytes / 1e6;
  return { received: round((b.received - a.received) / mb, 1), sent: round((b.sent - a.sent) / mb, 1) };
}

/**
 * One path's CPU cost against its reference's: the whole machine's CPU (every process, the kernel
 * included) per MB delivered, median over the rounds. On a machine whose cores the reference
 * already nearly fills, a throughput ratio follows the inverse of this one.
 */
function cpuPerMbRow(runs: FloodRun[], file: FloodFile, label: string, subject: string, ref: string): Row {
  const medCpu = (variant: string): number | null => {
    const xs = runs
      .filter((r) => r.variant === variant && r.bytes > file.expectedBytes / 2)
      .flatMap((r) => (r.machineCpuMsPerMb === undefined ? [] : [r.machineCpuMsPerMb]));
    return xs.length ? round(median(xs), 2) : null;
  };
  return {
    scenario: 'flood',
    metric: `${label}: machine CPU per MB delivered`,
    unit: 'ms/MB',
    subject,
    value: medCpu(subject),
    reference: { label: ref, value: medCpu(ref) },
    better: 'lower',
    noPlot: true,
  };
}

/** A floor's throughput against its reference: no target, the least a Node process on the PTY costs. */
function floorRow(label: string, subject: string, ref: string, med: (v: string) => number | null): Row {
  return {
    scenario: 'flood',
    metric: `${label} throughput: the floor of a node process on the PTY`,
    unit: 'MB/s',
    subject,
    value: med(subject),
    reference: { label: ref, value: med(ref) },
    better: 'higher',
  };
}

export async function floodScenario(env: BenchEnv, provider: SshPtyProvider): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const notes: string[] = [];
  const targetBytes = (env.opts.floodMb ?? (env.opts.quick ? 50 : 200)) * 1024 * 1024;
  const verify = !env.opts.quick;
  // Eight rounds in a full run: on a 2-core machine single rounds vary by ±15 %, and five
  // rounds left the median ratio wandering by ±0.1 from run to run. Quick runs take four
  // small ones (~5 s each for all variants).
  const rounds = env.opts.floodRounds ?? (env.opts.quick ? 4 : 8);
  const genStart = now();
  const file = generateFloodFile(env.dataDir, targetBytes);
  const genMs = now() - genStart;
  const want = (v: string) => !env.opts.floodVariants || env.opts.floodVariants.has(v);
  const local = want('local-provider') ? await localProvider(env) : undefined;
  const relay = want('relay-client') ? await startBenchRelay(env) : undefined;
  const ssh2 =
    want('ssh2-pty') || want('floor-ssh2') ? await connectSsh(resolveHost(hostConfig(env.sshd))) : undefined;
  const runs: FloodRun[] = [];
  try {
    await provider.listProcesses();
    const daemonPid = provider.linkInfo('h')?.daemonPid;
    const variants: Array<() => Promise<FloodRun>> = [];
    if (want('ssh')) variants.push(() => viaSsh(env, file, verify));
    if (want('ssh-aa'))
      variants.push(async () => ({ ...(await viaSsh(env, file, verify)), variant: SSH_AA }));
    /** A flood through an SSH provider, with its daemon's and sshd's CPU and the link's packets. */
    const viaSshProvider = async (variant: string, p: SshPtyProvider, pid: number | undefined) => {
      const before = cpuSnapshot(env, pid);
      const p0 = p.linkInfo('h')?.packets;
      const run = await viaProvider(variant, p, 'h', file, verify);
      run.cpuMs = cpuDelta(before, cpuSnapshot(env, pid));
      run.packetsPerMb = packetRates(p0, p.linkInfo('h')?.packets, run.bytes);
      return run;
    };
    if (want('ssh-provider')) variants.push(() => viaSshProvider('SshPtyProvider', provider, daemonPid));
    if (want('node-pty')) variants.push(() => viaNodePty(file, verify));
    if (local) variants.push(() => viaProvider('LocalPtyProvider', local, undefined, file, verify));
    if (relay)
      variants.push(() => viaProvider('RelayClient over WebSocket', relay.client, 'h', file, verify));
    const forwarder =
      want('floor-local') || want('floor-ssh') || want('floor-ssh2')
        ? writeBareForwarder(env.dataDir, file.path)
        : undefined;
    if (forwarder && want('floor-local'))
      variants.push(() => viaCommand(FLOOR_LOCAL, forwarder[0]!, forwarder.slice(1), file, verify));
    if (forwarder && want('floor-ssh'))
      variants.push(() =>
        viaCommand(
          FLOOR_SSH,
          'ssh',
          [...sshArgs(env.sshd, { tty: false }), shellJoin(forwarder)],
          file,
          verify,
        ),
      );
    if (ssh2) {
      const client = ssh2.client;
      if (want('ssh2-pty'))
        variants.push(() =>
          viaSsh2(SSH2_PTY, client, `exec cat ${shellQuote(file.path)}`, true, file, verify),
        );
      if (forwarder && want('floor-ssh2'))
        variants.push(() => viaSsh2(FLOOR_SSH2, client, shellJoin(forwarder), false, file, verify));
    }
    for (let r = 0; r < rounds; r++) {
      // Rotate the order so a slow phase of the machine does not always hit the same variant.
      for (let i = 0; i < variants.length; i++) {
        const v = variants[(i + r) % variants.length]!;
        try {
          const settleMs = await settleMachine();
          const cpuBefore = machineCpu();
          const ownBefore = process.cpuUsage();
          const gcs = countGcs();
          const run = await v();
          run.benchGcs = gcs.stop();
          run.settleMs = settleMs;
          const own = process.cpuUsage(ownBefore);
          const cpuAfter = machineCpu();
          run.machineCpuMsPerMb = round(((cpuAfter.busy - cpuBefore.busy) * 10) / (run.bytes / 1e6), 2);
          run.benchCpuMsPerMb = round((own.user + own.system) / 1000 / (run.bytes / 1e6), 2);
          runs.push(run);
          if (!run.complete) {
            const prefix =
              run.exactPrefix === undefined ? '' : run.exactPrefix ? ' (exact prefix)' : ' (NOT a prefix)';
            const msg = `${run.variant}: got ${run.bytes} of ${file.expectedBytes} bytes${prefix}`;
            // Raw node-pty is known to lose a PTY's last output at exit (libuv EOF on POLLHUP): a
            // property of the reference (and of the floors, which read node-pty the same way).
            (NODE_PTY_READERS.has(run.variant) ? notes : errors).push(msg);
          } else if (run.sha256Ok === false) errors.push(`${run.variant}: sha256 mismatch`);
          if (run.gaps > 0) errors.push(`${run.variant}: ${run.gaps} seq gaps`);
        } catch (err) {
          errors.push(String((err as Error).message ?? err));
        }
      }
    }
  } finally {
    await relay?.close();
    ssh2?.close();
    await local?.shutdownDaemon().catch(() => {});
    await local?.dispose();
  }
  const med = (variant: string): number | null => {
    // A lost tail (see missingBytes) does not change the rate of what did arrive.
    const xs = runs
      .filter((r) => r.variant === variant && r.bytes > file.expectedBytes / 2)
      .map((r) => r.mbPerSec);
    return xs.length ? round(median(xs), 2) : null;
  };
  const best = (variant: string): number | null => {
    const xs = runs.filter((r) => r.variant === variant).map((r) => r.mbPerSec);
    return xs.length ? Math.max(...xs) : null;
  };
  const worstMissing = (variant: string): number | null => {
    const xs = runs.filter((r) => r.variant === variant).map((r) => r.missingBytes);
    return xs.length ? Math.max(...xs) : null;
  };
  // A variant that did not run (--flood-variants) has no verdict.
  const ratioAtLeast = (v: number | null, ref: number | null, min: number) =>
    v === null || ref === null || ref === 0 ? null : v / ref >= min;
  const metZero = (v: number | null) => (v === null ? null : v === 0);
  /** Each round's ratio of `variant` to `ssh -tt` (both ran in the same round, next to each other). */
  const roundRatios = (
    variant: string,
    refVariant = 'ssh -tt',
  ): { min: number; median: number; max: number } | null => {
    const ref = runs.filter((r) => r.variant === refVariant);
    const xs = runs
      .filter((r) => r.variant === variant)
      .map((r, i) => (ref[i] ? r.mbPerSec / ref[i]!.mbPerSec : NaN))
      .filter((x) => Number.isFinite(x));
    if (xs.length === 0) return null;
    return { min: round(Math.min(...xs), 3), median: round(median(xs), 3), max: round(Math.max(...xs), 3) };
  };
  const label = `${Math.round(file.fileBytes / 1e6)} MB cat`;
  const rows: Row[] = [
    {
      scenario: 'flood',
      metric: `${label} throughput`,
      unit: 'MB/s',
      subject: 'SshPtyProvider',
      value: med('SshPtyProvider'),
      reference: { label: 'ssh -tt', value: med('ssh -tt') },
      better: 'higher',
      target: {
        text: `≥ ${FLOOD_TARGET_RATIO}× ssh -tt`,
        met: ratioAtLeast(med('SshPtyProvider'), med('ssh -tt'), FLOOD_TARGET_RATIO),
      },
    },
    {
      scenario: 'flood',
      metric: `${label} throughput: A/A control`,
      unit: 'MB/s',
      subject: SSH_AA,
      value: med(SSH_AA),
      reference: { label: 'ssh -tt', value: med('ssh -tt') },
      better: 'higher',
    },
    {
      scenario: 'flood',
      metric: `${label} throughput`,
      unit: 'MB/s',
      subject: 'LocalPtyProvider',
      value: med('LocalPtyProvider'),
      reference: { label: 'node-pty local', value: med('node-pty local') },
      better: 'higher',
      target: {
        text: `≥ ${FLOOD_TARGET_RATIO}× node-pty`,
        met: ratioAtLeast(med('LocalPtyProvider'), med('node-pty local'), FLOOD_TARGET_RATIO),
      },
    },
    {
      scenario: 'flood',
      metric: `${label}: bytes missing at exit (worst run)`,
      unit: 'bytes',
      subject: 'SshPtyProvider',
      value: worstMissing('SshPtyProvider'),
      reference: { label: 'ssh -tt', value: worstMissing('ssh -tt') },
      better: 'lower',
      target: { text: '= 0 (byte-exact)', met: metZero(worstMissing('SshPtyProvider')) },
      noPlot: true,
    },
    {
      scenario: 'flood',
      metric: `${label}: bytes missing at exit (worst run)`,
      unit: 'bytes',
      subject: 'LocalPtyProvider',
      value: worstMissing('LocalPtyProvider'),
      reference: { label: 'node-pty local', value: worstMissing('node-pty local') },
      better: 'lower',
      target: { text: '= 0 (byte-exact)', met: metZero(worstMissing('LocalPtyProvider')) },
      noPlot: true,
    },
    {
      scenario: 'flood',
      metric: `${label} throughput`,
      unit: 'MB/s',
      subject: 'RelayClient over WebSocket',
      value: med('RelayClient over WebSocket'),
      reference: { label: 'ssh -tt', value: med('ssh -tt') },
      better: 'higher',
      target: {
        text: `≥ ${FLOOD_TARGET_RATIO}× ssh -tt`,
        met: ratioAtLeast(med('RelayClient over WebSocket'), med('ssh -tt'), FLOOD_TARGET_RATIO),
      },
    },
    floorRow(label, FLOOR_SSH, 'ssh -tt', med),
    floorRow(label, FLOOR_SSH2, 'ssh -tt', med),
    {
      scenario: 'flood',
      metric: `${label} throughput: ssh2 reading what ssh -tt reads`,
      unit: 'MB/s',
      subject: SSH2_PTY,
      value: med(SSH2_PTY),
      reference: { label: 'ssh -tt', value: med('ssh -tt') },
      better: 'higher',
    },
    floorRow(label, FLOOR_LOCAL, 'node-pty local', med),
    cpuPerMbRow(runs, file, label, 'SshPtyProvider', 'ssh -tt'),
    cpuPerMbRow(runs, file, label, 'LocalPtyProvider', 'node-pty local'),
    cpuPerMbRow(runs, file, label, 'RelayClient over WebSocket', 'ssh -tt'),
    cpuPerMbRow(runs, file, label, FLOOR_SSH, 'ssh -tt'),
    cpuPerMbRow(runs, file, label, FLOOR_SSH2, 'ssh -tt'),
    cpuPerMbRow(runs, file, label, SSH2_PTY, 'ssh -tt'),
    cpuPerMbRow(runs, file, label, FLOOR_LOCAL, 'node-pty local'),
  ];
  return {
    name: 'flood',
    rows,
    details: {
      file: { ...file, path: undefined, generateMs: round(genMs, 0) },
      rounds,
      sha256Verified: verify,
      notes,
      medianMbPerSec: Object.fromEntries(
        [
          'ssh -tt',
          SSH_AA,
          'SshPtyProvider',
          'node-pty local',
          'LocalPtyProvider',
          FLOOR_SSH,
          FLOOR_LOCAL,
        ].map((v) => [v, med(v)]),
      ),
      bestMbPerSec: Object.fromEntries(
        ['ssh -tt', 'SshPtyProvider', 'node-pty local', 'LocalPtyProvider'].map((v) => [v, best(v)]),
      ),
      /** Spread of the per-round ratios: how much one round can say on this machine. */
      roundRatiosToSsh: {
        [SSH_AA]: roundRatios(SSH_AA),
        SshPtyProvider: roundRatios('SshPtyProvider'),
        'RelayClient over WebSocket': roundRatios('RelayClient over WebSocket'),
        [FLOOR_SSH]: roundRatios(FLOOR_SSH),
        [FLOOR_SSH2]: roundRatios(FLOOR_SSH2),
        [SSH2_PTY]: roundRatios(SSH2_PTY),
      },
      roundRatiosToNodePty: {
        LocalPtyProvider: roundRatios('LocalPtyProvider', 'node-pty local'),
        [FLOOR_LOCAL]: roundRatios(FLOOR_LOCAL, 'node-pty local'),
      },
      runs,
    },
    errors,
    durationMs: now() - t0,
  };
}
