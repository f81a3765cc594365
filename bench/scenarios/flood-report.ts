import type { FloodFile } from '../lib/flood-file.js';
import type { ReaderCost } from '../lib/pty-reader.js';
import type { Row } from '../lib/results.js';
import { median, round } from '../lib/util.js';

/** One flood: what a variant's consumer got, how fast, and what it cost. */
export interface FloodRun {
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
  /** The thread that read the PTY (the daemon's, a floor's, this process's for node-pty): its cost per MB. */
  reader?: ReaderCost;
}

/** A second `ssh -tt` in each round: OpenSSH against itself, the run's A/A spread. */
export const SSH_AA = 'ssh -tt (A/A)';
/**
 * The floors (bare-forwarder.ts): a bare node process reading the PTY, read locally and over SSH.
 * What any design with a Node process on the PTY costs before it does anything of its own.
 */
export const FLOOR_LOCAL = 'bare node forwarder';
export const FLOOR_SSH = 'bare node forwarder over ssh';
export const FLOOR_SSH2 = 'bare node forwarder over ssh2';
/** `cat` in a PTY of sshd's, as `ssh -tt` runs it, read through ssh2 in this process. */
export const SSH2_PTY = 'ssh2 PTY channel';
/** Variants whose lost tail at exit is node-pty's (libuv EOF on POLLHUP), not a failure of the run. */
export const NODE_PTY_READERS = new Set(['node-pty local', FLOOR_LOCAL, FLOOR_SSH, FLOOR_SSH2]);
/** Flood target: each provider at least this share of its reference, medians of the same run. */
const FLOOD_TARGET_RATIO = 0.9;

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

/** Median of the runs' PTY reader figure `key` for `variant`, or null when it was not measured. */
function medianReader(
  runs: FloodRun[],
  file: FloodFile,
  variant: string,
  key: 'cpuMsPerMb' | 'readsPerMb',
): number | null {
  const xs = runs
    .filter((r) => r.variant === variant && r.bytes > file.expectedBytes / 2)
    .flatMap((r) => (r.reader === undefined ? [] : [r.reader[key]]));
  return xs.length ? round(median(xs), 2) : null;
}

/**
 * The CPU per MB of the thread that reads `subject`'s PTY (the daemon's main thread) against that
 * of the floor's (a bare node process that only forwards): what the daemon's own work adds to the
 * step a flood waits for.
 */
function readerRow(runs: FloodRun[], file: FloodFile, label: string, subject: string, ref: string): Row {
  return {
    scenario: 'flood',
    metric: `${label}: CPU per MB of the thread that reads the PTY`,
    unit: 'ms/MB',
    subject,
    value: medianReader(runs, file, subject, 'cpuMsPerMb'),
    reference: { label: ref, value: medianReader(runs, file, ref, 'cpuMsPerMb') },
    better: 'lower',
    noPlot: true,
  };
}

type Median = (variant: string) => number | null;

/**
 * `subject`'s median throughput against `ref`'s (`metric` follows "N MB cat throughput"); with
 * `target`, the row carries the flood target against it (no verdict when either did not run).
 */
function throughputRow(metric: string, subject: string, ref: string, med: Median, target?: string): Row {
  const v = med(subject);
  const r = med(ref);
  return {
    scenario: 'flood',
    metric,
    unit: 'MB/s',
    subject,
    value: v,
    reference: { label: ref, value: r },
    better: 'higher',
    ...(target && {
      target: {
        text: `≥ ${FLOOD_TARGET_RATIO}× ${target}`,
        met: v === null || r === null || r === 0 ? null : v / r >= FLOOD_TARGET_RATIO,
      },
    }),
  };
}

/** The bytes `subject` lost at the program's exit in its worst run: none, byte-exact. */
function missingRow(label: string, subject: string, ref: string, worst: Median): Row {
  const v = worst(subject);
  return {
    scenario: 'flood',
    metric: `${label}: bytes missing at exit (worst run)`,
    unit: 'bytes',
    subject,
    value: v,
    reference: { label: ref, value: worst(ref) },
    better: 'lower',
    target: { text: '= 0 (byte-exact)', met: v === null ? null : v === 0 },
    noPlot: true,
  };
}

/**
 * The flood's rows (throughput against each reference, the floors, bytes missing, CPU per MB) and
 * the details beside them (medians, bests, the spread of the per-round ratios).
 */
export function floodReport(
  runs: FloodRun[],
  file: FloodFile,
): { rows: Row[]; details: Record<string, unknown> } {
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
  const tp = `${label} throughput`;
  const floor = `${tp}: the floor of a node process on the PTY`;
  const rows: Row[] = [
    throughputRow(tp, 'SshPtyProvider', 'ssh -tt', med, 'ssh -tt'),
    throughputRow(`${tp}: A/A control`, SSH_AA, 'ssh -tt', med),
    throughputRow(tp, 'LocalPtyProvider', 'node-pty local', med, 'node-pty'),
    missingRow(label, 'SshPtyProvider', 'ssh -tt', worstMissing),
    missingRow(label, 'LocalPtyProvider', 'node-pty local', worstMissing),
    throughputRow(tp, 'RelayClient over WebSocket', 'ssh -tt', med, 'ssh -tt'),
    throughputRow(floor, FLOOR_SSH, 'ssh -tt', med),
    throughputRow(floor, FLOOR_SSH2, 'ssh -tt', med),
    throughputRow(`${tp}: ssh2 reading what ssh -tt reads`, SSH2_PTY, 'ssh -tt', med),
    throughputRow(floor, FLOOR_LOCAL, 'node-pty local', med),
    cpuPerMbRow(runs, file, label, 'SshPtyProvider', 'ssh -tt'),
    cpuPerMbRow(runs, file, label, 'LocalPtyProvider', 'node-pty local'),
    cpuPerMbRow(runs, file, label, 'RelayClient over WebSocket', 'ssh -tt'),
    cpuPerMbRow(runs, file, label, FLOOR_SSH, 'ssh -tt'),
    cpuPerMbRow(runs, file, label, FLOOR_SSH2, 'ssh -tt'),
    cpuPerMbRow(runs, file, label, SSH2_PTY, 'ssh -tt'),
    cpuPerMbRow(runs, file, label, FLOOR_LOCAL, 'node-pty local'),
    readerRow(runs, file, label, 'SshPtyProvider', FLOOR_LOCAL),
    readerRow(runs, file, label, 'LocalPtyProvider', FLOOR_LOCAL),
    readerRow(runs, file, label, 'RelayClient over WebSocket', FLOOR_LOCAL),
  ];
  return {
    rows,
    details: {
      medianMbPerSec: Object.fromEntries(
        [
          'ssh -tt',
          SSH_AA,
          'SshPtyProvider',
          'RelayClient over WebSocket',
          'node-pty local',
          'LocalPtyProvider',
          FLOOR_SSH,
          FLOOR_SSH2,
          SSH2_PTY,
          FLOOR_LOCAL,
        ].map((v) => [v, med(v)]),
      ),
      bestMbPerSec: Object.fromEntries(
        ['ssh -tt', 'SshPtyProvider', 'node-pty local', 'LocalPtyProvider'].map((v) => [v, best(v)]),
      ),
      /** The thread that reads each variant's PTY: median CPU and read calls per MB. */
      ptyReader: Object.fromEntries(
        [
          'SshPtyProvider',
          'RelayClient over WebSocket',
          'LocalPtyProvider',
          'node-pty local',
          FLOOR_LOCAL,
        ].map((v) => [
          v,
          {
            thread: runs.find((r) => r.variant === v && r.reader)?.reader?.thread ?? null,
            cpuMsPerMb: medianReader(runs, file, v, 'cpuMsPerMb'),
            readsPerMb: medianReader(runs, file, v, 'readsPerMb'),
          },
        ]),
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
    },
  };
}
