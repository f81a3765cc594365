/**
 * Slow clients (issue 20): one `yes` flood, one AHP client that reads everything, ten that
 * subscribe and then stop reading. Measures the relay's peak RSS, the reader's throughput against
 * the same reader alone in the same run, what the stalled clients get once they read again, and
 * the relay's RSS with 100 idle subscribed clients. The relay is a real `ptyrelay serve` process
 * with the built-in local host.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { RELAY_NODE_OPTIONS } from '../../relay/core/relay-runtime.js';
import { packageRoot } from '../../relay/core/stub-bundle.js';
import type { BenchEnv } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, round, sleep, waitFor } from '../lib/util.js';

const TOKEN = 'bench-slow-clients-token-0123456789abcdef';
const STALLED = 10;
const IDLE = 100;
/** Target: relay peak RSS with ten stalled clients. */
const RSS_TARGET_MB = 200;
/** Target: reader throughput with stalled clients / alone. */
const READER_TARGET = 0.9;

interface AhpClient {
  ws: WebSocket;
  bytes: number;
  closeCode?: number;
  lastServerSeq: number;
  /** `terminal/cleared` envelopes seen: resynchronized after falling out of the action log. */
  cleared: number;
  request(method: string, params: unknown): Promise<{ result?: Record<string, unknown>; error?: unknown }>;
  pause(): void;
  resume(): void;
}

function connect(url: string, clientId: string): Promise<AhpClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    const waiting = new Map<number, (r: { result?: Record<string, unknown>; error?: unknown }) => void>();
    let n = 0;
    const c: AhpClient = {
      ws,
      bytes: 0,
      lastServerSeq: 0,
      cleared: 0,
      request: (method, params) =>
        new Promise((res) => {
          const id = ++n;
          waiting.set(id, res);
          ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
        }),
      pause: () => (ws as unknown as { _socket: { pause(): void } })._socket.pause(),
      resume: () => (ws as unknown as { _socket: { resume(): void } })._socket.resume(),
    };
    ws.on('message', (m: Buffer, binary) => {
      c.bytes += m.length;
      if (binary) return;
      const msg = JSON.parse(m.toString()) as {
        id?: number;
        method?: string;
        params?: { serverSeq?: number; action?: { type?: string } };
      };
      if (msg.id !== undefined && waiting.has(msg.id)) {
        waiting.get(msg.id)!(msg as never);
        waiting.delete(msg.id);
      } else if (msg.method === 'action' && typeof msg.params?.serverSeq === 'number') {
        c.lastServerSeq = msg.params.serverSeq;
        if (msg.params.action?.type === 'terminal/cleared') c.cleared++;
      }
    });
    ws.on('close', (code) => {
      c.closeCode = code;
    });
    ws.on('error', reject);
    ws.on('open', async () => {
      await c.request('initialize', { protocolVersions: ['0.1.0'], clientId });
      resolve(c);
    });
  });
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function startServe(
  env: BenchEnv,
): Promise<{ proc: ChildProcess; url: string; stop(): Promise<void> }> {
  const home = join(env.localRoot, 'slow-clients-home');
  const runtimeDir = join(env.localRoot, 'slow-clients-run');
  mkdirSync(home, { recursive: true });
  const proc = spawn(
    process.execPath,
    [...RELAY_NODE_OPTIONS, join(packageRoot(), 'dist/bin/ptyrelay.js'), 'serve', '--listen', '127.0.0.1:0'],
    {
      env: {
        ...process.env,
        HOME: home,
        PTYRELAY_TOKEN: TOKEN,
        PTYRELAY_RUNTIME_DIR: runtimeDir,
        PTYRELAY_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const onOut = (d: Buffer) => {
    out += d.toString();
  };
  proc.stdout?.on('data', onOut);
  proc.stderr?.on('data', onOut);
  await waitFor(() => /ws:\/\/127\.0\.0\.1:\d+/.test(out), 30_000, 'the relay to listen');
  const url = /ws:\/\/127\.0\.0\.1:\d+/.exec(out)![0];
  return {
    proc,
    url,
    async stop() {
      proc.kill('SIGINT');
      await new Promise((r) => proc.once('exit', r));
      // The daemon outlives the relay by design; the bench's own one goes with it.
      // `--` first: a pattern that starts with a dash is otherwise taken for an option of pkill's
      // own, which then kills nothing (this daemon used to outlive the bench).
      const killed = spawn('pkill', ['-f', '--', `--runtime-dir ${runtimeDir}`]);
      await new Promise((r) => killed.once('exit', r));
    },
  };
}

export async function slowClientsScenario(env: BenchEnv): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const phaseMs = env.opts.quick ? 8_000 : 60_000;
  const relay = await startServe(env);
  const clients: AhpClient[] = [];
  try {
    const reader = await connect(relay.url, 'reader');
    clients.push(reader);
    const created = await reader.request('createTerminal', {
      claim: { kind: 'client', clientId: 'reader' },
      command: 'yes',
      args: [],
    });
    const channel = String(created.result?.channel);
    await reader.request('subscribe', { channel });

    // The reader alone.
    await sleep(1000);
    let b0 = reader.bytes;
    await sleep(phaseMs / 2);
    const alone = (reader.bytes - b0) / 1e6 / (phaseMs / 2000);

    // Ten stalled clients.
    const stalled: AhpClient[] = [];
    for (let i = 0; i < STALLED; i++) {
      const c = await connect(relay.url, `stalled-${i}`);
      await c.request('subscribe', { channel });
      c.pause();
      stalled.push(c);
      clients.push(c);
    }
    b0 = reader.bytes;
    let peak = rssMb(relay.proc.pid!);
    const tEnd = now() + phaseMs;
    while (now() < tEnd) {
      await sleep(500);
      peak = Math.max(peak, rssMb(relay.proc.pid!));
    }
    const withStalled = (reader.bytes - b0) / 1e6 / (phaseMs / 1000);

    // They read again: each catches up from the action log, or is resynchronized in place
    // (terminal/cleared and the current state) when the log no longer holds what it missed.
    for (const c of stalled) c.resume();
    let caughtUp = 0;
    let closed4008 = 0;
    const hung: number[] = [];
    const head = () => reader.lastServerSeq;
    for (const [i, c] of stalled.entries()) {
      try {
        await waitFor(() => c.closeCode !== undefined || c.lastServerSeq >= head() - 100, 30_000, 'catch-up');
        if (c.closeCode === 4008) closed4008++;
        else if (c.closeCode === undefined) caughtUp++;
        else hung.push(i);
      } catch {
        hung.push(i);
      }
    }
    const resynced = stalled.filter((c) => c.cleared > 0 && c.closeCode === undefined).length;
    if (hung.length > 0) errors.push(`stalled clients neither caught up nor were closed: ${hung.join(', ')}`);
    for (const c of stalled) c.ws.close();

    // 100 idle subscribed clients (the flood stopped).
    await reader.request('disposeTerminal', { channel });
    const idle = await reader.request('createTerminal', {
      claim: { kind: 'client', clientId: 'reader' },
      command: 'sh',
      args: ['-c', 'exec cat'],
    });
    const idleChannel = String(idle.result?.channel);
    for (let i = 0; i < IDLE; i++) {
      const c = await connect(relay.url, `idle-${i}`);
      await c.request('subscribe', { channel: idleChannel });
      clients.push(c);
    }
    await sleep(1000);
    const idleRss = rssMb(relay.proc.pid!);
    await reader.request('disposeTerminal', { channel: idleChannel });

    const ratio = withStalled / alone;
    const rows: Row[] = [
      {
        scenario: 'slow-clients',
        metric: `relay peak RSS, 1 reader + ${STALLED} stalled AHP clients on a yes flood`,
        unit: 'MB',
        subject: 'ptyrelay serve',
        value: round(peak, 0),
        better: 'lower',
        target: { text: `≤ ${RSS_TARGET_MB} MB`, met: peak <= RSS_TARGET_MB },
      },
      {
        scenario: 'slow-clients',
        metric: 'reader throughput with stalled clients',
        unit: 'MB/s',
        subject: 'with 10 stalled',
        value: round(withStalled, 1),
        reference: { label: 'alone, same run', value: round(alone, 1) },
        better: 'higher',
        target: { text: `≥ ${READER_TARGET}×`, met: ratio >= READER_TARGET },
      },
      {
        scenario: 'slow-clients',
        metric: `stalled clients live again after reading (of ${STALLED}; resynced in place: ${resynced})`,
        unit: 'clients',
        subject: 'caught up or resynced',
        value: caughtUp,
        better: 'higher',
        target: { text: `${STALLED}, none closed`, met: caughtUp === STALLED && closed4008 === 0 },
      },
      {
        scenario: 'slow-clients',
        metric: `relay RSS, ${IDLE} idle subscribed clients`,
        unit: 'MB',
        subject: 'ptyrelay serve',
        value: round(idleRss, 0),
        better: 'lower',
      },
    ];
    return {
      name: 'slow-clients',
      rows,
      details: {
        phaseMs,
        aloneMBps: alone,
        withStalledMBps: withStalled,
        peakRssMb: peak,
        caughtUp,
        resynced,
        closed4008,
        idleRss,
      },
      errors,
      durationMs: now() - t0,
    };
  } finally {
    for (const c of clients) c.ws.terminate();
    await relay.stop();
  }
}
