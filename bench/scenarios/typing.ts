import * as pty from 'node-pty';
import type { IPtyProvider } from '../../provider/contract.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { type BenchEnv, localProvider, sshArgs } from '../lib/env.js';
import { startBenchRelay } from '../lib/relay.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, round, sleep, summarize, waitFor } from '../lib/util.js';

/** Raw mode without echo: every byte typed comes back exactly once, from cat. */
const RAW_CAT = 'stty raw -echo; printf READY; exec cat';
const WARMUP = 20;
const SAMPLE_TIMEOUT_MS = 2000;
/** Pause between keystrokes (plus jitter), roughly a fast typist; keeps samples independent. */
const GAP_MS = 8;

/** One place to type into and read back from. */
interface EchoTarget {
  label: string;
  write(ch: string): void;
  close(): Promise<void>;
  /** Filled by the target's data handler. */
  text: string;
  expect: string | undefined;
  tEnd: number;
  onEcho: (() => void) | undefined;
}

function newTarget(label: string): EchoTarget {
  return {
    label,
    write: () => {},
    close: async () => {},
    text: '',
    expect: undefined,
    tEnd: 0,
    onEcho: undefined,
  };
}

/** Runs in the data callback, so the timestamp is taken when the byte is handed to the consumer. */
function feed(t: EchoTarget, chunk: string): void {
  if (t.expect !== undefined) {
    if (chunk.includes(t.expect)) {
      t.tEnd = now();
      t.expect = undefined;
      t.onEcho?.();
    }
    return;
  }
  if (t.text.length < 4096) t.text += chunk;
}

async function providerTarget(label: string, p: IPtyProvider, host?: string): Promise<EchoTarget> {
  const t = newTarget(label);
  let id: string | undefined;
  const decoder = new TextDecoder();
  const off = p.onData((e) => {
    if (e.id === id || id === undefined) feed(t, decoder.decode(e.data, { stream: true }));
  });
  const r = await p.spawn({ host, cols: 80, rows: 24, command: 'sh', args: ['-c', RAW_CAT] });
  id = r.id;
  if (r.replay) feed(t, decoder.decode(r.replay, { stream: true }));
  t.write = (ch) => {
    p.write(r.id, ch).catch(() => {});
  };
  t.close = async () => {
    off();
    await p.shutdown(r.id, { immediate: true }).catch(() => {});
  };
  return t;
}

function nodePtyTarget(label: string, file: string, args: string[]): EchoTarget {
  const t = newTarget(label);
  const proc = pty.spawn(file, args, {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    cwd: '/',
    env: process.env as Record<string, string>,
  });
  proc.onData((d) => feed(t, d));
  t.write = (ch) => proc.write(ch);
  t.close = async () => {
    proc.kill('SIGKILL');
  };
  return t;
}

async function sample(t: EchoTarget, ch: string): Promise<number | undefined> {
  t.expect = ch;
  const done = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), SAMPLE_TIMEOUT_MS);
    t.onEcho = () => {
      clearTimeout(timer);
      resolve(true);
    };
  });
  const t0 = now();
  t.write(ch);
  const ok = await done;
  t.onEcho = undefined;
  t.expect = undefined;
  return ok ? t.tEnd - t0 : undefined;
}

export async function typingScenario(env: BenchEnv, provider: SshPtyProvider): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const samples = env.opts.quick ? 100 : 500;
  const local = await localProvider(env);
  const relay = await startBenchRelay(env);
  const targets: EchoTarget[] = [];
  const latencies = new Map<string, number[]>();
  const timeouts = new Map<string, number>();
  try {
    targets.push(await providerTarget('SshPtyProvider', provider, 'h'));
    targets.push(nodePtyTarget('ssh -tt', 'ssh', [...sshArgs(env.sshd), RAW_CAT]));
    targets.push(await providerTarget('LocalPtyProvider', local));
    targets.push(nodePtyTarget('node-pty local', 'sh', ['-c', RAW_CAT]));
    targets.push(await providerTarget('RelayClient over WebSocket', relay.client, 'h'));
    for (const t of targets) {
      await waitFor(() => t.text.includes('READY'), 15_000, `${t.label} ready`);
      latencies.set(t.label, []);
      timeouts.set(t.label, 0);
    }
    await sleep(100);
    for (let i = 0; i < WARMUP + samples; i++) {
      const ch = String.fromCharCode(0x61 + (i % 26));
      // Round-robin: every target sees the same moment of the machine, within a few ms.
      for (const t of targets) {
        const dt = await sample(t, ch);
        if (dt === undefined) timeouts.set(t.label, timeouts.get(t.label)! + 1);
        else if (i >= WARMUP) latencies.get(t.label)!.push(dt);
        await sleep(GAP_MS + Math.random() * 4);
      }
    }
  } finally {
    for (const t of targets) await t.close();
    await relay.close();
    await local.shutdownDaemon().catch(() => {});
    await local.dispose();
  }
  for (const [label, n] of timeouts) if (n > 0) errors.push(`${label}: ${n} keystrokes never came back`);
  const stats = Object.fromEntries(
    [...latencies].map(([label, xs]) => [
      label,
      Object.fromEntries(Object.entries(summarize(xs)).map(([k, v]) => [k, round(v, 3)])),
    ]),
  );
  const p = (label: string, q: 'p50' | 'p99'): number | null => {
    const v = (stats[label] as Record<string, number> | undefined)?.[q];
    return v === undefined || Number.isNaN(v) ? null : v;
  };
  const sshP50 = p('ssh -tt', 'p50');
  const relayP50 = p('SshPtyProvider', 'p50');
  const relayP99 = p('SshPtyProvider', 'p99');
  const rows: Row[] = [
    {
      scenario: 'typing',
      metric: 'keystroke echo p50',
      unit: 'ms',
      subject: 'SshPtyProvider',
      value: relayP50,
      reference: { label: 'ssh -tt', value: sshP50 },
      better: 'lower',
      target: {
        text: '≤ ssh p50 + 1 ms',
        met: relayP50 === null || sshP50 === null ? null : relayP50 <= sshP50 + 1,
      },
    },
    {
      scenario: 'typing',
      metric: 'keystroke echo p99',
      unit: 'ms',
      subject: 'SshPtyProvider',
      value: relayP99,
      reference: { label: 'ssh -tt', value: p('ssh -tt', 'p99') },
      better: 'lower',
      target: { text: '≤ 5 ms', met: relayP99 === null ? null : relayP99 <= 5 },
    },
    {
      scenario: 'typing',
      metric: 'keystroke echo p50',
      unit: 'ms',
      subject: 'LocalPtyProvider',
      value: p('LocalPtyProvider', 'p50'),
      reference: { label: 'node-pty local', value: p('node-pty local', 'p50') },
      better: 'lower',
    },
    {
      scenario: 'typing',
      metric: 'keystroke echo p50',
      unit: 'ms',
      subject: 'RelayClient over WebSocket',
      value: p('RelayClient over WebSocket', 'p50'),
      reference: { label: 'ssh -tt', value: sshP50 },
      better: 'lower',
    },
    {
      scenario: 'typing',
      metric: 'keystroke echo p99',
      unit: 'ms',
      subject: 'RelayClient over WebSocket',
      value: p('RelayClient over WebSocket', 'p99'),
      reference: { label: 'ssh -tt', value: p('ssh -tt', 'p99') },
      better: 'lower',
    },
  ];
  return {
    name: 'typing',
    rows,
    details: {
      samples,
      warmup: WARMUP,
      gapMs: GAP_MS,
      stats,
      raw: Object.fromEntries([...latencies].map(([k, xs]) => [k, xs.map((x) => round(x, 3))])),
    },
    errors,
    durationMs: now() - t0,
  };
}
