import { type ChildProcess, spawn } from 'node:child_process';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { type BenchEnv, sshArgs } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import {
  busyPercent,
  collectGarbage,
  cpuByPid,
  cpuDeltaByComm,
  descendants,
  machineCpu,
  now,
  procComm,
  procCpuMs,
  procPss,
  procStatusBytes,
  round,
  selfReadBytes,
  sleep,
} from '../lib/util.js';

const FOREGROUND = 5;
const SAMPLE_MS = 500;
/**
 * How long after its sessions were shut down the daemon's RSS is read again: long enough for what
 * the daemon does once they are gone (a collection 1 s after the last drop, the model worker's end
 * WORKER_IDLE_MS after the last model closed, a heap trim after each) and for V8's own collection
 * of an idle heap, which came 10-12 s after in probes.
 */
const AFTER_CLOSE_MS = 15_000;
const MB = 1e6;

interface Sample {
  t: number;
  a: number;
  b: number;
  bytes: number;
  rchar?: number;
}

const peak = (xs: Sample[], k: 'a' | 'b'): number => Math.max(0, ...xs.map((x) => x[k]));

function rate(samples: Sample[], k: 'bytes' | 'rchar'): number | null {
  const first = samples[0];
  const last = samples.at(-1);
  if (!first || !last || last.t === first.t || first[k] === undefined || last[k] === undefined) return null;
  return (last[k]! - first[k]!) / ((last.t - first.t) / 1000);
}

async function relaySide(provider: SshPtyProvider, n: number, durationMs: number) {
  const daemonPid = provider.linkInfo('h')?.daemonPid;
  if (!daemonPid) throw new Error('no daemon pid');
  const ids: string[] = [];
  const fg = new Set<string>();
  let bytes = 0;
  let fgBytes = 0;
  // Only this scenario's sessions run on the provider meanwhile.
  const off = provider.onData((e) => {
    bytes += e.data.length;
    if (fg.has(e.id)) fgBytes += e.data.length;
  });
  collectGarbage();
  const baseline = {
    relayRss: process.memoryUsage().rss,
    stubRss: procStatusBytes(daemonPid, 'VmRSS') ?? 0,
  };
  const samples: Sample[] = [];
  let cpu0 = { relay: 0, daemon: 0 };
  let machine0 = machineCpu();
  let procs0 = cpuByPid();
  try {
    for (let i = 0; i < n; i++) {
      const r = await provider.spawn({ host: 'h', cols: 80, rows: 24, command: 'yes' });
      ids.push(r.id);
      if (i < FOREGROUND) fg.add(r.id);
    }
    // Their output is thinned to a tail (keep-tail thinning) while they stay in the background.
    await Promise.all(ids.filter((id) => !fg.has(id)).map((id) => provider.setPtyBackgrounded(id, true)));
    const cpu = process.cpuUsage();
    cpu0 = { relay: (cpu.user + cpu.system) / 1000, daemon: procCpuMs(daemonPid) ?? 0 };
    machine0 = machineCpu();
    procs0 = cpuByPid();
    const t0 = now();
    while (now() - t0 < durationMs) {
      samples.push({
        t: now(),
        a: process.memoryUsage().rss,
        b: procStatusBytes(daemonPid, 'VmRSS') ?? 0,
        bytes,
        rchar: selfReadBytes(),
      });
      await sleep(SAMPLE_MS);
    }
  } finally {
    off();
  }
  const cpu1 = process.cpuUsage();
  const elapsed = samples.length > 1 ? samples.at(-1)!.t - samples[0]!.t : 1;
  const cpuPct = {
    relay: round(((cpu1.user + cpu1.system) / 1000 - cpu0.relay) / elapsed, 3) * 100,
    daemon: round(((procCpuMs(daemonPid) ?? 0) - cpu0.daemon) / elapsed, 3) * 100,
    machineBusyAllCores: busyPercent(machine0, machineCpu()),
    /** Percent of one core, by command, over the window. */
    byCommand: cpuDeltaByComm(procs0, cpuByPid(), elapsed),
  };
  const heap = process.memoryUsage();
  const stubHwm = procStatusBytes(daemonPid, 'VmHWM');
  const tShut = now();
  await Promise.all(ids.map((id) => provider.shutdown(id, { immediate: true }).catch(() => {})));
  const shutdownAllMs = round(now() - tShut, 0);
  await sleep(AFTER_CLOSE_MS);
  const stubAfterClose = procStatusBytes(daemonPid, 'VmRSS') ?? 0;
  return {
    sessions: n,
    backgrounded: n - fg.size,
    baselineMB: { relayRss: round(baseline.relayRss / MB, 1), stubRss: round(baseline.stubRss / MB, 1) },
    relayRssPeakMB: round(peak(samples, 'a') / MB, 1),
    stubRssPeakMB: round(peak(samples, 'b') / MB, 1),
    stubVmHwmMB: stubHwm === undefined ? null : round(stubHwm / MB, 1),
    relayHeapAtEndMB: {
      heapUsed: round(heap.heapUsed / MB, 1),
      external: round(heap.external / MB, 1),
      arrayBuffers: round(heap.arrayBuffers / MB, 1),
    },
    dataBytesPerSec: rate(samples, 'bytes'),
    foregroundBytes: fgBytes,
    totalBytes: bytes,
    readSyscallBytesPerSec: rate(samples, 'rchar'),
    cpuPercent: cpuPct,
    shutdownAllMs,
    stubRssAfterCloseMB: round(stubAfterClose / MB, 1),
    timeline: samples.map((s) => ({
      t: round((s.t - samples[0]!.t) / 1000, 1),
      relayRssMB: round(s.a / MB, 1),
      stubRssMB: round(s.b / MB, 1),
      bytes: s.bytes,
    })),
  };
}

/** n OpenSSH clients each running `yes` in a remote tty; their and their sshd processes' memory. */
async function sshSide(env: BenchEnv, n: number, durationMs: number) {
  const before = new Set(descendants(env.sshd.pid));
  const children: ChildProcess[] = [];
  let bytes = 0;
  const samples: Sample[] = [];
  const sumPss = (pids: number[]) => pids.reduce((a, p) => a + (procPss(p) ?? 0), 0);
  const sumRss = (pids: number[]) => pids.reduce((a, p) => a + (procStatusBytes(p, 'VmRSS') ?? 0), 0);
  const serverPids = () =>
    descendants(env.sshd.pid).filter((p) => !before.has(p) && procComm(p)?.startsWith('sshd'));
  let rssAtEnd = { clients: 0, servers: 0 };
  let machine0 = machineCpu();
  let procs0 = cpuByPid();
  let machineBusy = 0;
  let byCommand: Record<string, number> = {};
  try {
    for (let i = 0; i < n; i++) {
      const c = spawn('ssh', [...sshArgs(env.sshd), 'yes'], { stdio: ['pipe', 'pipe', 'ignore'] });
      c.stdout!.on('data', (d: Buffer) => {
        bytes += d.length;
      });
      c.on('error', () => {});
      children.push(c);
    }
    const t0 = now();
    // Logins take a moment; measure once they all stream.
    await sleep(Math.min(3000, durationMs / 4));
    machine0 = machineCpu();
    procs0 = cpuByPid();
    const w0 = now();
    while (now() - t0 < durationMs) {
      const clients = children.map((c) => c.pid!).filter(Boolean);
      samples.push({ t: now(), a: sumPss(clients), b: sumPss(serverPids()), bytes });
      await sleep(SAMPLE_MS);
    }
    rssAtEnd = { clients: sumRss(children.map((c) => c.pid!)), servers: sumRss(serverPids()) };
    machineBusy = busyPercent(machine0, machineCpu());
    byCommand = cpuDeltaByComm(procs0, cpuByPid(), now() - w0);
  } finally {
    const closed = children.map(
      (c) => new Promise<void>((r) => (c.exitCode !== null ? r() : c.once('close', () => r()))),
    );
    for (const c of children) c.kill('SIGTERM');
    await Promise.race([Promise.all(closed), sleep(5000)]);
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  }
  return {
    sessions: n,
    clientsPssPeakMB: round(peak(samples, 'a') / MB, 1),
    serverPssPeakMB: round(peak(samples, 'b') / MB, 1),
    clientsRssSumAtEndMB: round(rssAtEnd.clients / MB, 1),
    serverRssSumAtEndMB: round(rssAtEnd.servers / MB, 1),
    bytesPerSec: rate(samples, 'bytes'),
    machineBusyAllCores: machineBusy,
    cpuPercentByCommand: byCommand,
  };
}

/**
 * `yes` in 10 terminals (5 in the background: the issue's row), and in full runs in 50 (45 in
 * the background: the peaks' row) after a fresh daemon, each against as many OpenSSH sessions.
 */
export async function memoryScenario(
  env: BenchEnv,
  provider: SshPtyProvider,
  freshDaemon: () => Promise<void>,
): Promise<ScenarioResult> {
  const t0 = now();
  const durationMs = env.opts.quick ? 5000 : 20_000;
  const rows: Row[] = [];
  const runs: Record<string, unknown>[] = [];
  for (const [i, n] of (env.opts.quick ? [10] : [10, 50]).entries()) {
    if (i > 0) await freshDaemon();
    await provider.listProcesses();
    const relay = await relaySide(provider, n, durationMs);
    await sleep(500);
    const ssh = await sshSide(env, n, durationMs);
    rows.push(...memoryRows(n, relay, ssh));
    runs.push({ ptyrelay: relay, openssh: ssh });
  }
  return { name: 'memory', rows, details: { durationMs, runs }, errors: [], durationMs: now() - t0 };
}

function memoryRows(
  n: number,
  relay: Awaited<ReturnType<typeof relaySide>>,
  ssh: Awaited<ReturnType<typeof sshSide>>,
): Row[] {
  const mbps = (v: number | null) => (v === null ? null : round(v / MB, 2));
  return [
    {
      scenario: 'memory',
      metric: `${n} × yes (${relay.backgrounded} bg): relay memory`,
      unit: 'MB',
      subject: 'relay RSS peak',
      value: relay.relayRssPeakMB,
      reference: { label: `${n} ssh clients, PSS sum`, value: ssh.clientsPssPeakMB },
      better: 'lower',
      target: { text: '≤ 200 MB', met: relay.relayRssPeakMB <= 200 },
    },
    {
      scenario: 'memory',
      metric: `${n} × yes (${relay.backgrounded} bg): relay memory`,
      unit: 'MB',
      subject: 'relay RSS growth over its baseline',
      noPlot: true,
      value: round(relay.relayRssPeakMB - relay.baselineMB.relayRss, 1),
      reference: { label: `${n} ssh clients, PSS sum`, value: ssh.clientsPssPeakMB },
      better: 'lower',
    },
    {
      scenario: 'memory',
      metric: `${n} × yes (${relay.backgrounded} bg): host memory`,
      unit: 'MB',
      subject: 'stub daemon RSS peak',
      value: relay.stubRssPeakMB,
      reference: { label: `${n} sshd sessions, PSS sum`, value: ssh.serverPssPeakMB },
      better: 'lower',
      // Issue 19 (history on disk, background models without scrollback); was ≤ 400 MB.
      target: { text: '≤ 200 MB', met: relay.stubRssPeakMB <= 200 },
    },
    {
      scenario: 'memory',
      metric: `${n} × yes (${relay.backgrounded} bg): host memory`,
      unit: 'MB',
      subject: 'stub daemon RSS growth over its idle baseline',
      value: round(relay.stubRssPeakMB - relay.baselineMB.stubRss, 1),
      reference: { label: `${n} sshd sessions, PSS sum`, value: ssh.serverPssPeakMB },
      better: 'lower',
      target: {
        text: '≤ the sshd sessions’ PSS sum',
        met: relay.stubRssPeakMB - relay.baselineMB.stubRss <= ssh.serverPssPeakMB,
      },
    },
    {
      scenario: 'memory',
      metric: `${n} × yes (${relay.backgrounded} bg): host memory once they were shut down`,
      unit: 'MB',
      subject: `stub daemon RSS ${AFTER_CLOSE_MS / 1000} s after`,
      noPlot: true,
      value: relay.stubRssAfterCloseMB,
      reference: { label: 'its idle baseline before them', value: relay.baselineMB.stubRss },
      better: 'lower',
    },
    {
      scenario: 'memory',
      metric: `${n} × yes (${relay.backgrounded} bg): data received`,
      unit: 'MB/s',
      subject: 'relay, all sessions',
      value: mbps(relay.dataBytesPerSec),
      reference: { label: `${n} ssh clients`, value: mbps(ssh.bytesPerSec) },
      better: 'lower',
      note: 'background sessions are thinned to their tail',
    },
  ];
}
