import { spawn } from 'node:child_process';
import * as pty from 'node-pty';
import type { ClientChannel } from 'ssh2';
import { resolveHost } from '../../relay/ssh/host-config.js';
import { connectSsh } from '../../relay/ssh/host-connection.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { type SshdInstance, startSshd } from '../../test/support/sshd.js';
import { type BenchEnv, hostConfig, sshArgs, sshProvider } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, procStatusBytes, round, sleep, summarize, withTimeout } from '../lib/util.js';

/** sshd's MaxSessions in the harness is 100 channels per connection; stay under it. */
const MAX_SSH_CHANNELS = 90;
const MB = 1e6;

const stats = (xs: number[]) =>
  Object.fromEntries(Object.entries(summarize(xs)).map(([k, v]) => [k, round(v, 2)])) as Record<
    'n' | 'min' | 'p50' | 'p90' | 'p99' | 'max' | 'mean',
    number
  >;

async function manyPtys(provider: SshPtyProvider, n: number) {
  const daemonPid = provider.linkInfo('h')?.daemonPid;
  const rssBefore = daemonPid ? procStatusBytes(daemonPid, 'VmRSS') : undefined;
  const ids: string[] = [];
  const lat: number[] = [];
  let error: string | undefined;
  const t0 = now();
  try {
    for (let i = 0; i < n; i++) {
      const t = now();
      const r = await provider.spawn({ host: 'h', cols: 80, rows: 24, command: 'cat' });
      lat.push(now() - t);
      ids.push(r.id);
    }
  } catch (err) {
    error = (err as Error).message;
  }
  const total = now() - t0;
  const rssAfter = daemonPid ? procStatusBytes(daemonPid, 'VmRSS') : undefined;
  const tList = now();
  const listed = (await provider.listProcesses()).length;
  const listMs = now() - tList;
  const tShut = now();
  await Promise.all(ids.map((id) => provider.shutdown(id, { immediate: true }).catch(() => {})));
  const shutdownMs = now() - tShut;
  return {
    spawned: ids.length,
    error,
    totalMs: round(total, 0),
    latencyMs: stats(lat),
    /** Mean spawn latency per tenth of the run: growth means per-spawn work grows with the session count. */
    meanLatencyByDecileMs: Array.from({ length: 10 }, (_, d) => {
      const part = lat.slice(Math.floor((d * lat.length) / 10), Math.floor(((d + 1) * lat.length) / 10));
      return round(part.reduce((a, b) => a + b, 0) / Math.max(1, part.length), 1);
    }),
    listProcessesMs: round(listMs, 1),
    listed,
    shutdownAllMs: round(shutdownMs, 0),
    stubRssBeforeMB: rssBefore === undefined ? null : round(rssBefore / MB, 1),
    stubRssWithAllMB: rssAfter === undefined ? null : round(rssAfter / MB, 1),
  };
}

/** Reference: one PTY channel per terminal on one ssh2 connection to the same sshd. */
async function sshChannels(env: BenchEnv, n: number) {
  const conn = await connectSsh(resolveHost(hostConfig(env.sshd)));
  const channels: ClientChannel[] = [];
  const lat: number[] = [];
  const t0 = now();
  try {
    for (let i = 0; i < n; i++) {
      const t = now();
      const ch = await new Promise<ClientChannel>((resolve, reject) =>
        conn.client.exec(
          'exec cat',
          { pty: { cols: 80, rows: 24, term: 'xterm-256color' } },
          (err, stream) => (err ? reject(err) : resolve(stream)),
        ),
      );
      lat.push(now() - t);
      ch.on('data', () => {});
      ch.stderr.on('data', () => {});
      channels.push(ch);
    }
    return { opened: channels.length, totalMs: round(now() - t0, 0), latencyMs: stats(lat) };
  } finally {
    for (const ch of channels) ch.close();
    await sleep(200);
    conn.close();
  }
}

/** Floor: node-pty spawning `cat` in this process. */
function localPtys(n: number) {
  const procs: pty.IPty[] = [];
  const lat: number[] = [];
  const t0 = now();
  try {
    for (let i = 0; i < n; i++) {
      const t = now();
      procs.push(
        pty.spawn('cat', [], {
          name: 'xterm-256color',
          cols: 80,
          rows: 24,
          cwd: '/',
          env: process.env as Record<string, string>,
        }),
      );
      lat.push(now() - t);
    }
    return { spawned: procs.length, totalMs: round(now() - t0, 0), latencyMs: stats(lat) };
  } finally {
    for (const p of procs) p.kill('SIGKILL');
  }
}

async function startMany(count: number): Promise<SshdInstance[]> {
  const out: SshdInstance[] = [];
  try {
    for (let i = 0; i < count; i += 5) {
      out.push(...(await Promise.all(Array.from({ length: Math.min(5, count - i) }, () => startSshd()))));
    }
  } catch (err) {
    await Promise.all(out.map((s) => s.stop()));
    throw err;
  }
  return out;
}

async function manyHosts(env: BenchEnv, count: number) {
  const sshds = await startMany(count);
  for (const s of sshds) env.ownPids.add(s.pid);
  try {
    // Reference: every host through its own OpenSSH client, in parallel, until the remote prints.
    const tRef = now();
    const refLat: number[] = [];
    const clients = sshds.map((s) =>
      spawn('ssh', [...sshArgs(s), 'echo ready; exec cat'], { stdio: ['pipe', 'pipe', 'ignore'] }),
    );
    try {
      await withTimeout(
        Promise.all(
          clients.map(
            (c) =>
              new Promise<void>((resolve, reject) => {
                let out = '';
                c.stdout!.on('data', (d: Buffer) => {
                  out += d.toString();
                  if (out.includes('ready')) {
                    refLat.push(now() - tRef);
                    resolve();
                  }
                });
                c.on('close', (code) => reject(new Error(`ssh exited ${code}`)));
              }),
          ),
        ),
        60_000,
        'ssh to every host',
      );
    } finally {
      for (const c of clients) c.kill('SIGTERM');
    }
    const refTotal = now() - tRef;
    await sleep(500);

    const hosts = Object.fromEntries(sshds.map((s, i) => [`h${i}`, hostConfig(s)]));
    // When each host reaches each step of first contact (connect, deploy check, stub link).
    const steps = new Map<string, Record<string, number>>();
    let t0 = now();
    const p = sshProvider(env, hosts, {
      onProgress: (h, pr) => {
        const m = steps.get(h) ?? {};
        const key = pr.step === 'probe' && m.probe !== undefined ? 'probed' : pr.step;
        m[key] ??= round(now() - t0, 1);
        steps.set(h, m);
      },
    });
    const lat: number[] = [];
    t0 = now();
    try {
      const results = await withTimeout(
        Promise.all(
          Object.keys(hosts).map(async (h) => {
            const r = await p.spawn({ host: h, cols: 80, rows: 24, command: 'cat' });
            lat.push(now() - t0);
            return r;
          }),
        ),
        120_000,
        'spawn on every host',
      );
      const total = now() - t0;
      await Promise.all(results.map((r) => p.shutdown(r.id, { immediate: true }).catch(() => {})));
      const phase = (from: string, to: string) =>
        stats(
          [...steps.values()]
            .filter((m) => m[from] !== undefined && m[to] !== undefined)
            .map((m) => m[to]! - m[from]!),
        );
      return {
        hosts: count,
        ptyrelay: {
          totalMs: round(total, 0),
          perHostDoneMs: stats(lat),
          /** Per-host phase durations: SSH login, remote probe, install check, then ensure + channel + hello. */
          phasesMs: {
            sshConnect: phase('connect', 'connected'),
            probe: phase('connected', 'probed'),
            installCheck: phase('check', 'done'),
            stubLink: phase('done', 'link'),
          },
        },
        openssh: { totalMs: round(refTotal, 0), perHostDoneMs: stats(refLat) },
      };
    } finally {
      await p.dispose();
    }
  } finally {
    await Promise.all(sshds.map((s) => s.stop()));
  }
}

export async function scaleScenario(env: BenchEnv, provider: SshPtyProvider): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const n = env.opts.quick ? 100 : 500;
  const hostCount = env.opts.quick ? 5 : 20;
  await provider.listProcesses();
  const details: Record<string, unknown> = {};
  const rows: Row[] = [];
  const ptys = await manyPtys(provider, n);
  details.ptyrelay = ptys;
  if (ptys.spawned < n) errors.push(`spawned only ${ptys.spawned} of ${n}: ${ptys.error}`);
  let channels: Awaited<ReturnType<typeof sshChannels>> | undefined;
  try {
    channels = await sshChannels(env, Math.min(n, MAX_SSH_CHANNELS));
    details.sshChannels = channels;
  } catch (err) {
    errors.push(`ssh channels: ${(err as Error).message}`);
  }
  const local = localPtys(n);
  details.nodePtyLocal = local;
  rows.push(
    {
      scenario: 'scale',
      metric: `${n} PTYs, one connection: spawn p50`,
      unit: 'ms',
      subject: 'SshPtyProvider',
      value: ptys.latencyMs.p50,
      reference: {
        label: `ssh2 PTY channel (n=${channels?.opened ?? 0})`,
        value: channels?.latencyMs.p50 ?? null,
      },
      better: 'lower',
    },
    {
      scenario: 'scale',
      metric: `${n} PTYs, one connection: spawn p99`,
      unit: 'ms',
      subject: 'SshPtyProvider',
      value: ptys.latencyMs.p99,
      reference: {
        label: `ssh2 PTY channel (n=${channels?.opened ?? 0})`,
        value: channels?.latencyMs.p99 ?? null,
      },
      better: 'lower',
    },
    {
      scenario: 'scale',
      metric: `${n} PTYs, one connection: total`,
      unit: 'ms',
      subject: 'SshPtyProvider',
      value: ptys.totalMs,
      reference: { label: 'node-pty local', value: local.totalMs },
      better: 'lower',
    },
  );
  try {
    const hosts = await manyHosts(env, hostCount);
    details.hosts = hosts;
    rows.push({
      scenario: 'scale',
      metric: `${hostCount} hosts: connect all + one PTY each`,
      unit: 'ms',
      subject: 'SshPtyProvider',
      value: hosts.ptyrelay.totalMs,
      reference: { label: `${hostCount} × ssh -tt in parallel`, value: hosts.openssh.totalMs },
      better: 'lower',
    });
  } catch (err) {
    errors.push(`hosts: ${(err as Error).message}`);
  }
  return { name: 'scale', rows, details, errors, durationMs: now() - t0 };
}
