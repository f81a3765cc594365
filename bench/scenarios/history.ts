import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { DEFAULT_SCROLLBACK_IDLE_MS } from '../../agent-stub/session/model-scrollback.js';
import { daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { encodeJsonFrame, FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { type BenchEnv, startProfiledDaemon } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, procStatusBytes, round, sleep } from '../lib/util.js';
import { floodRows } from './history-flood.js';

/**
 * Issue 19, output history on disk, side by side with the RAM ring in the same run: a local daemon
 * with the log (default) and one with `--history off`, each in a runtime and state dir of its own.
 * - resume: a relay vanishes (no goodbye) while the program writes ~40 MiB; a relay with the same
 *   identity attaches from seq 0 afterwards: bytes lost, reset or not;
 * - memory: daemon RSS with 50 idle sessions that each wrote 10 MiB (once written, and once they
 *   are idle: their models have dropped their scrollback);
 * - yes: daemon RSS peak with 50 × `yes`, 45 of them in the background;
 * - flood: throughput of one session writing a flood, log on vs off, alternated.
 * `BENCH_HISTORY_PARTS=memory,yes` runs only those parts (the figures that are not timings).
 */
const MB = 1e6;
const MiB = 1024 * 1024;
/** `seq 1 N` with CR LF in a PTY: ~43 MB for 5,000,000. */
const RESUME_LINES = 5_000_000;
const MEMORY_SESSIONS = 50;
/** ~10.8 MB per session. */
const MEMORY_LINES = 1_250_000;
/** After the last output: the idle time after which models drop their scrollback, plus the collection after it. */
const IDLE_WAIT_MS = DEFAULT_SCROLLBACK_IDLE_MS + 5000;
const YES_SESSIONS = 50;
const YES_FOREGROUND = 5;
const SAMPLE_MS = 500;

function note(msg: string): void {
  process.stderr.write(`[bench history] ${msg}\n`);
}

type Variant = 'log' | 'ring';

interface Daemon {
  variant: Variant;
  provider: LocalPtyProvider;
  runtimeDir: string;
  pid: number;
  cleanup(): Promise<void>;
}

async function startDaemon(env: BenchEnv, variant: Variant): Promise<Daemon> {
  const root = mkdtempSync(join(env.localRoot, `history-${variant}-`));
  const runtimeDir = join(root, 'run');
  const saved = process.env.PTYRELAY_STATE_DIR;
  process.env.PTYRELAY_STATE_DIR = join(root, 'state');
  const daemonArgs = variant === 'ring' ? ['--history', 'off'] : [];
  if (env.opts.profileStubDir)
    await startProfiledDaemon(runtimeDir, join(env.opts.profileStubDir, variant), daemonArgs);
  const provider = new LocalPtyProvider({
    runtimeDir,
    daemonArgs,
  });
  const { pid } = await provider.daemonInfo();
  // Assigning undefined would set the string 'undefined' (a relative state dir for later daemons).
  if (saved === undefined) delete process.env.PTYRELAY_STATE_DIR;
  else process.env.PTYRELAY_STATE_DIR = saved;
  env.ownPids.add(pid);
  return {
    variant,
    provider,
    runtimeDir,
    pid,
    async cleanup() {
      await provider.shutdownDaemon().catch(() => {});
      await provider.dispose();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Length of `seq 1 n` with CR LF line ends. */
function seqBytes(n: number): number {
  let total = 0;
  for (let digits = 1, lo = 1; lo <= n; digits++, lo *= 10)
    total += (Math.min(n, lo * 10 - 1) - lo + 1) * (digits + 2);
  return total;
}

/** Attaches as relay `linkId`, never acknowledges, and vanishes without a goodbye. */
async function vanishingRelay(d: Daemon, id: string, linkId: string): Promise<void> {
  const sock = connect(daemonSocketPath(d.runtimeDir, (await d.provider.daemonInfo()).buildId));
  const dec = new FrameDecoder();
  await new Promise<void>((res, rej) => {
    sock.once('connect', () => res());
    sock.once('error', rej);
  });
  const replied = new Promise<void>((resolve) => {
    sock.on('data', (c) => {
      for (const f of dec.push(c))
        if (
          (f.type === FrameType.Json || f.type === FrameType.JsonBlob) &&
          (f.message as { t?: string }).t === 'res'
        )
          resolve();
    });
  });
  sock.write(
    encodeJsonFrame({ t: 'hello', protocol: STUB_PROTOCOL_VERSION, buildId: 'bench', role: 'bench', linkId }),
  );
  sock.write(
    encodeJsonFrame({
      t: 'req',
      rid: 1,
      method: 'attach',
      params: { id: id.slice(id.lastIndexOf('/') + 1), fromSeq: 0 },
    }),
  );
  await replied;
  sock.destroy();
}

async function resume(d: Daemon, lines: number) {
  const expected = seqBytes(lines) + 'RESUME-END\r\n'.length;
  // Spawned by a link that leaves (goodbye), so only the vanished relay could hold the program.
  const spawner = new LocalPtyProvider({ runtimeDir: d.runtimeDir, relayId: 'bench-spawner' });
  const r = await spawner.spawn({
    cols: 80,
    rows: 24,
    command: 'sh',
    args: ['-c', `read go; seq 1 ${lines}; echo RESUME-END; exec sleep 600`],
  });
  await spawner.dispose();
  await vanishingRelay(d, r.id, 'bench-relay');
  const t0 = now();
  await d.provider.write(r.id, 'go\r');
  // The outage lasts until the program is done (or 60 s): the daemon alone holds its output.
  let head = 0;
  while (now() - t0 < 60_000) {
    head = (await d.provider.readHistory(r.id, { fromSeq: Number.MAX_SAFE_INTEGER, maxBytes: 1 })).headSeq;
    if (head >= expected) break;
    await sleep(250);
  }
  const outageMs = now() - t0;
  const back = new LocalPtyProvider({ runtimeDir: d.runtimeDir, relayId: 'bench-relay' });
  let got = 0;
  let next = -1;
  let gaps = 0;
  const off = back.onData((e) => {
    if (next >= 0 && e.seq !== next) gaps++;
    next = e.seq + e.data.length;
    got += e.data.length;
  });
  const t1 = now();
  try {
    const a = await back.attach(r.id, { fromSeq: 0 });
    const reset = a.providerSequence.generation === 'reset';
    const from = reset ? (a.snapshot?.seq ?? 0) : 0;
    got += a.replay?.length ?? 0;
    next = a.providerSequence.value;
    const deadline = now() + 60_000;
    while (from + got < head && now() < deadline) await sleep(50);
    return {
      writtenBytes: head,
      outageMs: round(outageMs, 0),
      programFinishedDuringOutage: head >= expected,
      reset,
      lostBytes: reset ? from : Math.max(0, head - got),
      gaps,
      replayMs: round(now() - t1, 0),
    };
  } finally {
    off();
    await back.dispose();
    await d.provider.shutdown(r.id, { immediate: true }).catch(() => {});
  }
}

async function memory(d: Daemon, sessions: number, lines: number) {
  const ids: string[] = [];
  for (let i = 0; i < sessions; i++) {
    const r = await d.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', `seq 1 ${lines}; echo MEM-END; exec sleep 600`],
    });
    ids.push(r.id);
  }
  const expected = seqBytes(lines) + 'MEM-END\r\n'.length;
  const deadline = now() + 240_000;
  for (const id of ids) {
    while (now() < deadline) {
      const h = (await d.provider.readHistory(id, { fromSeq: Number.MAX_SAFE_INTEGER, maxBytes: 1 })).headSeq;
      if (h >= expected) break;
      await sleep(250);
    }
  }
  // Written: the model has caught up and the logs are written.
  await sleep(3000);
  const written = procStatusBytes(d.pid, 'VmRSS') ?? 0;
  note(
    `${d.variant}: ${sessions} sessions wrote ${round(expected / MiB, 1)} MiB each: stub RSS ${round(written / MB, 1)} MB; idle wait ${IDLE_WAIT_MS / 1000} s`,
  );
  await sleep(IDLE_WAIT_MS);
  const rss = procStatusBytes(d.pid, 'VmRSS') ?? 0;
  note(`${d.variant}: idle: stub RSS ${round(rss / MB, 1)} MB`);
  await Promise.all(ids.map((id) => d.provider.shutdown(id, { immediate: true }).catch(() => {})));
  return {
    sessions,
    bytesEach: expected,
    stubRssMB: round(rss / MB, 1),
    writtenRssMB: round(written / MB, 1),
  };
}

/** Stub RSS while `n` sessions run `yes`, all but YES_FOREGROUND of them in the background. */
async function yesMemory(d: Daemon, n: number, durationMs: number) {
  const ids: string[] = [];
  const baseline = procStatusBytes(d.pid, 'VmRSS') ?? 0;
  let peak = 0;
  try {
    for (let i = 0; i < n; i++) {
      const r = await d.provider.spawn({ cols: 80, rows: 24, command: 'yes' });
      ids.push(r.id);
    }
    await Promise.all(ids.slice(YES_FOREGROUND).map((id) => d.provider.setPtyBackgrounded(id, true)));
    const t0 = now();
    while (now() - t0 < durationMs) {
      peak = Math.max(peak, procStatusBytes(d.pid, 'VmRSS') ?? 0);
      await sleep(SAMPLE_MS);
    }
  } finally {
    await Promise.all(ids.map((id) => d.provider.shutdown(id, { immediate: true }).catch(() => {})));
  }
  note(`${d.variant}: ${n} × yes (${n - YES_FOREGROUND} bg): stub RSS peak ${round(peak / MB, 1)} MB`);
  return {
    sessions: n,
    backgrounded: n - YES_FOREGROUND,
    baselineMB: round(baseline / MB, 1),
    stubRssPeakMB: round(peak / MB, 1),
  };
}

export async function historyScenario(env: BenchEnv): Promise<ScenarioResult> {
  const t0 = now();
  const quick = env.opts.quick;
  const errors: string[] = [];
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const parts = new Set((process.env.BENCH_HISTORY_PARTS ?? 'resume,memory,yes,flood').split(','));
  type Part = (
    log: Daemon,
    ring: Daemon,
    quick: boolean,
    rows: Row[],
    details: Record<string, unknown>,
    env: BenchEnv,
  ) => Promise<void>;
  const all: Array<[string, Part]> = [
    ['resume', resumeRows],
    ['memory', memoryRows],
    ['yes', yesRows],
    ['flood', floodRows],
  ];
  for (const [name, part] of all) {
    if (!parts.has(name)) continue;
    // Fresh daemons for each part: none inherits another part's memory.
    const log = await startDaemon(env, 'log');
    const ring = await startDaemon(env, 'ring');
    try {
      await part(log, ring, quick, rows, details, env);
    } catch (err) {
      errors.push((err as Error).stack ?? String(err));
    } finally {
      await log.cleanup();
      await ring.cleanup();
    }
  }
  return { name: 'history', rows, details, errors, durationMs: round(now() - t0, 0) };
}

async function resumeRows(
  log: Daemon,
  ring: Daemon,
  quick: boolean,
  rows: Row[],
  details: Record<string, unknown>,
) {
  const lines = quick ? RESUME_LINES / 5 : RESUME_LINES;
  const [rl, rr] = [await resume(log, lines), await resume(ring, lines)];
  details.resume = { log: rl, ring: rr };
  rows.push({
    scenario: 'history',
    metric: `bytes lost resuming after an outage that wrote ${round(rl.writtenBytes / MiB, 1)} MiB`,
    unit: 'bytes',
    subject: 'stub with output log',
    value: rl.lostBytes,
    reference: { label: 'RAM ring only (--history off)', value: rr.lostBytes },
    better: 'lower',
    target: { text: '0 lost, no reset', met: rl.lostBytes === 0 && !rl.reset && rl.gaps === 0 },
    note: `log: reset ${rl.reset}, program finished during the outage ${rl.programFinishedDuringOutage}, outage ${rl.outageMs} ms; ring: reset ${rr.reset}, finished ${rr.programFinishedDuringOutage}`,
    noPlot: true,
  });
}

async function memoryRows(
  log: Daemon,
  ring: Daemon,
  quick: boolean,
  rows: Row[],
  details: Record<string, unknown>,
) {
  const sessions = quick ? 10 : MEMORY_SESSIONS;
  const [ml, mr] = [await memory(log, sessions, MEMORY_LINES), await memory(ring, sessions, MEMORY_LINES)];
  details.memory = { log: ml, ring: mr };
  rows.push({
    scenario: 'history',
    metric: `stub RSS, ${sessions} idle sessions that each wrote ${round(ml.bytesEach / MiB, 1)} MiB`,
    unit: 'MB',
    subject: 'stub with output log',
    value: ml.stubRssMB,
    reference: { label: 'RAM ring only (--history off)', value: mr.stubRssMB },
    better: 'lower',
    ...(sessions === MEMORY_SESSIONS ? { target: { text: '≤ 120 MB', met: ml.stubRssMB <= 120 } } : {}),
    note: `right after writing: ${ml.writtenRssMB} MB (log), ${mr.writtenRssMB} MB (ring); idle = ${IDLE_WAIT_MS / 1000} s later`,
  });
}

async function yesRows(
  log: Daemon,
  ring: Daemon,
  quick: boolean,
  rows: Row[],
  details: Record<string, unknown>,
) {
  const n = quick ? 10 : YES_SESSIONS;
  const durationMs = quick ? 5000 : 20_000;
  const [yl, yr] = [await yesMemory(log, n, durationMs), await yesMemory(ring, n, durationMs)];
  details.yes = { log: yl, ring: yr };
  rows.push({
    scenario: 'history',
    metric: `stub RSS peak, ${n} × yes (${yl.backgrounded} bg)`,
    unit: 'MB',
    subject: 'stub with output log',
    value: yl.stubRssPeakMB,
    reference: { label: 'RAM ring only (--history off)', value: yr.stubRssPeakMB },
    better: 'lower',
    ...(n === YES_SESSIONS ? { target: { text: '≤ 200 MB', met: yl.stubRssPeakMB <= 200 } } : {}),
  });
}
