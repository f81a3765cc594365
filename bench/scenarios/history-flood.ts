import type { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import type { BenchEnv } from '../lib/env.js';
import { type FloodFile, generateFloodFile } from '../lib/flood-file.js';
import type { Row } from '../lib/results.js';
import { median, now, procCpuMs, round, settleMachine, sleep } from '../lib/util.js';

/**
 * The history scenario's flood part (history.ts): throughput of one session writing a flood, with
 * the output log and without it (`--history off`), alternated and each side first in turn, every
 * round on a settled machine; with each daemon's CPU per MiB.
 */
const MiB = 1024 * 1024;
/**
 * Flood rounds per side (full runs; BENCH_HISTORY_FLOOD_ROUNDS overrides): one round of each side
 * spreads ±15 % on a 2-core machine, so a median of five could not tell a 3 % cost.
 */
const FLOOD_ROUNDS = 9;

/** What a round needs of a daemon of the history scenario. */
interface FloodDaemon {
  provider: LocalPtyProvider;
  pid: number;
}

/**
 * One `cat` of the flood scenario's text file (101-byte lines): the stream a build log or a `cat`
 * makes, which the screen model parses quickly, so the log's own cost shows. (A single endless
 * line, as this part used before, is bound by the model's parse at ~15 MiB/s and hid the log.)
 */
async function flood(d: FloodDaemon, file: FloodFile): Promise<FloodRound> {
  let got = 0;
  const bytes = file.expectedBytes;
  const r = await d.provider.spawn({
    cols: 80,
    rows: 24,
    command: 'sh',
    args: ['-c', `read go; cat '${file.path}'; exec sleep 600`],
  });
  const off = d.provider.onData((e) => {
    if (e.id === r.id) got += e.data.length;
  });
  await sleep(200);
  // Neither daemon's leftovers of the round before (a log removing its files, a model catching up)
  // may run into this one: they used to slow whichever variant came next.
  const settleMs = await settleMachine();
  got = 0;
  const cpu0 = procCpuMs(d.pid);
  const t0 = now();
  await d.provider.write(r.id, 'go\r');
  while (got < bytes && now() - t0 < 60_000) await sleep(5);
  const ms = now() - t0;
  const cpu1 = procCpuMs(d.pid);
  off();
  await d.provider.shutdown(r.id, { immediate: true }).catch(() => {});
  return {
    mibps: got / MiB / (ms / 1000),
    daemonCpuMsPerMiB: cpu0 === undefined || cpu1 === undefined ? undefined : (cpu1 - cpu0) / (got / MiB),
    settleMs,
  };
}

interface FloodRound {
  mibps: number;
  /** The daemon's CPU (every thread: main, model worker, libuv's pool) per MiB delivered. */
  daemonCpuMsPerMiB: number | undefined;
  settleMs: number;
}

export async function floodRows(
  log: FloodDaemon,
  ring: FloodDaemon,
  quick: boolean,
  rows: Row[],
  details: Record<string, unknown>,
  env: BenchEnv,
) {
  const rounds = Number(process.env.BENCH_HISTORY_FLOOD_ROUNDS) || (quick ? 1 : FLOOD_ROUNDS);
  const floodBytes = (quick ? 64 : 256) * MiB;
  const file = generateFloodFile(env.dataDir, floodBytes);
  const on: FloodRound[] = [];
  const offR: FloodRound[] = [];
  for (let i = 0; i < rounds; i++) {
    // Alternated, and each side first in turn, so that a busy moment of the machine hits both.
    if (i % 2 === 0) {
      on.push(await flood(log, file));
      offR.push(await flood(ring, file));
    } else {
      offR.push(await flood(ring, file));
      on.push(await flood(log, file));
    }
  }
  const speeds = (xs: FloodRound[]) => xs.map((x) => x.mibps);
  const cpus = (xs: FloodRound[]) =>
    xs.flatMap((x) => (x.daemonCpuMsPerMiB === undefined ? [] : [x.daemonCpuMsPerMiB]));
  const paired = on.map((x, i) => x.mibps / offR[i].mibps);
  details.flood = {
    logMiBps: speeds(on).map((v) => round(v, 1)),
    ringMiBps: speeds(offR).map((v) => round(v, 1)),
    pairedRatios: paired.map((v) => round(v, 3)),
    logDaemonCpuMsPerMiB: cpus(on).map((v) => round(v, 2)),
    ringDaemonCpuMsPerMiB: cpus(offR).map((v) => round(v, 2)),
    settleMs: [...on, ...offR].map((x) => x.settleMs),
  };
  const ratio = median(speeds(on)) / median(speeds(offR));
  const what = `flood (${floodBytes / MiB} MiB cat, median of ${rounds})`;
  rows.push({
    scenario: 'history',
    metric: `${what}: throughput`,
    unit: 'MiB/s',
    subject: 'stub with output log',
    value: round(median(speeds(on)), 1),
    reference: { label: 'RAM ring only (--history off)', value: round(median(speeds(offR)), 1) },
    better: 'higher',
    target: { text: '≥ 0.97× log off', met: ratio >= 0.97 },
    note: `ratio ${round(ratio, 3)}; median of the paired rounds ${round(median(paired), 3)}`,
  });
  if (cpus(on).length > 0 && cpus(offR).length > 0)
    rows.push({
      scenario: 'history',
      metric: `${what}: daemon CPU per MiB`,
      unit: 'ms',
      subject: 'stub with output log',
      value: round(median(cpus(on)), 2),
      reference: { label: 'RAM ring only (--history off)', value: round(median(cpus(offR)), 2) },
      better: 'lower',
    });
}
