import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { RELAY_NODE_OPTIONS } from '../../relay/core/relay-runtime.js';
import { packageRoot } from '../../relay/core/stub-bundle.js';
import { type BenchEnv, hostConfig, localProvider } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, procStatusBytes, round, sleep } from '../lib/util.js';

const MB = 1e6;
/** How long a process sits idle before its RSS is read (start-up garbage collected, timers settled). */
const SETTLE_MS = 4000;
/**
 * How long the daemon (and its reference, a bare node with a worker) sits idle after the shell's
 * spawn before the read its target is judged on: the spawn's aftermath outlasts SETTLE_MS (the
 * restore record is saved 2 s later; V8 collects the idle heap 8–10 s after the last activity,
 * which took a daemon from 80.7 to 75.3 MB while the relay and the bare nodes moved < 1.5 MB).
 */
const DAEMON_SETTLE_MS = 15_000;
/** Targets of the plain-runtime issue: idle footprints over bare node baselines of the same run. */
const RELAY_LOCAL_OVER_NODE_MB = 20;
const RELAY_SSH_OVER_NODE_MB = 35;
const DAEMON_OVER_NODE_WORKER_MB = 10;

async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  s.close();
  return port;
}

/** The RSS (VmRSS) of a process, the lowest of three reads 300 ms apart. */
async function lowestRss(pid: number): Promise<number> {
  const reads: number[] = [];
  for (let i = 0; i < 3; i++) {
    reads.push(procStatusBytes(pid, 'VmRSS') ?? Number.NaN);
    await sleep(300);
  }
  return Math.min(...reads);
}

/** The RSS of a process once it has sat idle for `settleMs` (SETTLE_MS by default). */
async function idleRss(pid: number, settleMs = SETTLE_MS): Promise<number> {
  await sleep(settleMs);
  return lowestRss(pid);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await Promise.race([once(child, 'exit'), sleep(5000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** RSS of a bare node (with one worker thread when `worker`), idle for `settleMs`. */
async function bareNode(worker: boolean, settleMs = SETTLE_MS): Promise<number> {
  const code = worker
    ? "const { Worker } = require('node:worker_threads'); new Worker('setInterval(() => {}, 1000)', { eval: true }); setInterval(() => {}, 1000);"
    : 'setInterval(() => {}, 1000);';
  const child = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  try {
    return await idleRss(child.pid!, settleMs);
  } finally {
    await stop(child);
  }
}

/** `ptyrelay serve` with the given hosts config, idle after its start. */
async function idleRelay(env: BenchEnv, name: string, hosts: Record<string, unknown>): Promise<number> {
  const home = join(env.dataDir, `idle-relay-${name}`);
  mkdirSync(join(home, '.config', 'ptyrelay'), { recursive: true, mode: 0o700 });
  const config = join(home, '.config', 'ptyrelay', 'config.json');
  writeFileSync(config, JSON.stringify({ hosts }), { mode: 0o600 });
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...RELAY_NODE_OPTIONS,
      join(packageRoot(), 'dist', 'bin', 'ptyrelay.js'),
      'serve',
      '--config',
      config,
      '--listen',
      `127.0.0.1:${port}`,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOME: home, PTYRELAY_TOKEN: 'bench-idle-token' },
    },
  );
  if (child.pid) env.ownPids.add(child.pid);
  try {
    const lines = createInterface({ input: child.stderr! });
    const ready = new Promise<void>((resolve, reject) => {
      lines.on('line', (l) => {
        if (l.includes('listening')) resolve();
      });
      child.once('exit', () => reject(new Error(`ptyrelay serve (${name}) exited before listening`)));
    });
    child.stdout!.resume();
    await Promise.race([
      ready,
      sleep(15_000).then(() => Promise.reject(new Error('ptyrelay serve did not listen in 15 s'))),
    ]);
    return await idleRss(child.pid!);
  } finally {
    await stop(child);
    rmSync(home, { recursive: true, force: true });
  }
}

/** A fresh local daemon with one idle shell: its RSS SETTLE_MS and DAEMON_SETTLE_MS after the spawn. */
async function idleDaemon(env: BenchEnv): Promise<{ early: number; settled: number }> {
  const p = await localProvider(env);
  try {
    await p.spawn({ cols: 80, rows: 24, command: 'bash', args: ['--norc', '--noprofile'] });
    const spawned = now();
    const { pid } = await p.daemonInfo();
    const early = await idleRss(pid);
    await sleep(Math.max(0, DAEMON_SETTLE_MS - (now() - spawned)));
    return { early, settled: await lowestRss(pid) };
  } finally {
    await p.shutdownDaemon().catch(() => {});
    await p.dispose();
  }
}

export async function idleMemoryScenario(env: BenchEnv): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const node = await bareNode(false);
  const nodeWorker = await bareNode(true, DAEMON_SETTLE_MS);
  const relayLocal = await idleRelay(env, 'local', {});
  // The hosts' daemon runs in the bench's runtime dir, which the bench ends and removes at its end
  // (the host's default dir would keep it running after the bench).
  const sshHost = { ...hostConfig(env.sshd), runtimeDir: env.runtimeDir };
  const relaySsh = await idleRelay(env, 'ssh', { h1: sshHost, h2: sshHost });
  const { early: daemonEarly, settled: daemon } = await idleDaemon(env);
  const mb = (b: number) => round(b / MB, 1);
  const over = (v: number, base: number, max: number) => ({ met: (v - base) / MB <= max });
  const rows: Row[] = [
    {
      scenario: 'idle-memory',
      metric: 'idle relay, only the local host (RSS)',
      unit: 'MB',
      subject: 'ptyrelay serve',
      value: mb(relayLocal),
      reference: { label: 'bare node (RSS)', value: mb(node) },
      better: 'lower',
      target: {
        text: `≤ node + ${RELAY_LOCAL_OVER_NODE_MB} MB`,
        ...over(relayLocal, node, RELAY_LOCAL_OVER_NODE_MB),
      },
    },
    {
      scenario: 'idle-memory',
      metric: 'idle relay, two SSH hosts configured (RSS)',
      unit: 'MB',
      subject: 'ptyrelay serve',
      value: mb(relaySsh),
      reference: { label: 'bare node (RSS)', value: mb(node) },
      better: 'lower',
      target: {
        text: `≤ node + ${RELAY_SSH_OVER_NODE_MB} MB`,
        ...over(relaySsh, node, RELAY_SSH_OVER_NODE_MB),
      },
    },
    {
      scenario: 'idle-memory',
      metric: `idle daemon, one shell, ${DAEMON_SETTLE_MS / 1000} s after its spawn (RSS)`,
      unit: 'MB',
      subject: 'stub daemon',
      value: mb(daemon),
      reference: { label: 'bare node with one worker (RSS)', value: mb(nodeWorker) },
      better: 'lower',
      target: {
        text: `≤ node with a worker + ${DAEMON_OVER_NODE_WORKER_MB} MB`,
        ...over(daemon, nodeWorker, DAEMON_OVER_NODE_WORKER_MB),
      },
    },
  ];
  return {
    name: 'idle-memory',
    rows,
    details: {
      settleMs: SETTLE_MS,
      daemonSettleMs: DAEMON_SETTLE_MS,
      rssMB: {
        node: mb(node),
        nodeWorker: mb(nodeWorker),
        relayLocal: mb(relayLocal),
        relaySsh: mb(relaySsh),
        daemon: mb(daemon),
        daemonAtSettleMs: mb(daemonEarly),
      },
    },
    errors,
    durationMs: now() - t0,
  };
}
