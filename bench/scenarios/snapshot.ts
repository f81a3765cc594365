import { SerializeAddon } from '@xterm/addon-serialize';
import xtermHeadless from '@xterm/headless';
import type { IPtyProvider } from '../../provider/contract.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { type BenchEnv, localProvider } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, round, sleep, summarize, waitFor } from '../lib/util.js';

const LINES = 10_000;
const REPEATS = 20;
/** Untimed calls first: the first serializations run in a cold (unoptimized) worker. */
const WARMUP = 3;
/** `seq` then silence: cat waits on the tty without printing a prompt. */
const SCRIPT = `seq 1 ${LINES}; exec cat`;

const stats = (xs: number[]) =>
  Object.fromEntries(Object.entries(summarize(xs)).map(([k, v]) => [k, round(v, 2)])) as Record<
    'n' | 'min' | 'p50' | 'p90' | 'p99' | 'max' | 'mean',
    number
  >;

async function viaProvider(p: IPtyProvider, host: string | undefined) {
  let id: string | undefined;
  const chunks: Buffer[] = [];
  const early: { id: string; data: Uint8Array }[] = [];
  const off = p.onData((e) => {
    if (id === undefined) early.push(e);
    else if (e.id === id) chunks.push(Buffer.from(e.data));
  });
  const r = await p.spawn({ host, cols: 80, rows: 24, command: 'sh', args: ['-c', SCRIPT] });
  id = r.id;
  if (r.replay) chunks.push(Buffer.from(r.replay));
  for (const e of early) if (e.id === id) chunks.push(Buffer.from(e.data));
  const tail = `\n${LINES}\r\n`;
  try {
    await waitFor(
      () => Buffer.concat(chunks).subarray(-16).toString().includes(tail.slice(1)),
      15_000,
      `${LINES} lines`,
    );
    // Let the model catch up with the flood before timing (it lags the live stream by design).
    await sleep(300);
    const lat: number[] = [];
    let size = 0;
    let complete = false;
    for (let i = 0; i < WARMUP + REPEATS; i++) {
      const t = now();
      const snap = await p.getBufferSnapshot(r.id, { scrollbackRows: LINES });
      if (i >= WARMUP) lat.push(now() - t);
      size = snap.data.length;
      complete = snap.data.includes('\r\n1\r\n2\r\n') || snap.data.startsWith('1\r\n2\r\n');
    }
    return {
      latencyMs: stats(lat),
      snapshotChars: size,
      holdsFirstLine: complete,
      output: Buffer.concat(chunks),
    };
  } finally {
    off();
    await p.shutdown(r.id, { immediate: true }).catch(() => {});
  }
}

/** Floor: the same output in an in-process @xterm/headless, serialized with the same addon. */
async function inProcess(output: Buffer) {
  const term = new xtermHeadless.Terminal({ cols: 80, rows: 24, scrollback: LINES, allowProposedApi: true });
  const ser = new SerializeAddon();
  term.loadAddon(ser as never);
  await new Promise<void>((r) => term.write(output, r));
  const lat: number[] = [];
  let size = 0;
  for (let i = 0; i < WARMUP + REPEATS; i++) {
    const t = now();
    size = ser.serialize({ scrollback: LINES }).length;
    if (i >= WARMUP) lat.push(now() - t);
  }
  term.dispose();
  return { latencyMs: stats(lat), snapshotChars: size };
}

export async function snapshotScenario(env: BenchEnv, provider: SshPtyProvider): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const remote = await viaProvider(provider, 'h');
  if (!remote.holdsFirstLine) errors.push('SshPtyProvider snapshot does not hold line 1');
  const local = await localProvider(env);
  let localRes: Awaited<ReturnType<typeof viaProvider>> | undefined;
  try {
    localRes = await viaProvider(local, undefined);
  } catch (err) {
    errors.push(`LocalPtyProvider: ${(err as Error).message}`);
  } finally {
    await local.shutdownDaemon().catch(() => {});
    await local.dispose();
  }
  const floor = await inProcess(remote.output);
  const rows: Row[] = [
    {
      scenario: 'snapshot',
      metric: `${LINES}-line scrollback snapshot p50`,
      unit: 'ms',
      subject: 'SshPtyProvider',
      value: remote.latencyMs.p50,
      reference: { label: 'in-process xterm serialize', value: floor.latencyMs.p50 },
      better: 'lower',
    },
    {
      scenario: 'snapshot',
      metric: `${LINES}-line scrollback snapshot p50`,
      unit: 'ms',
      subject: 'LocalPtyProvider',
      value: localRes?.latencyMs.p50 ?? null,
      reference: { label: 'in-process xterm serialize', value: floor.latencyMs.p50 },
      better: 'lower',
    },
  ];
  const strip = (x: Awaited<ReturnType<typeof viaProvider>> | undefined) =>
    x && { latencyMs: x.latencyMs, snapshotChars: x.snapshotChars, holdsFirstLine: x.holdsFirstLine };
  return {
    name: 'snapshot',
    rows,
    details: {
      repeats: REPEATS,
      warmup: WARMUP,
      sshPtyProvider: strip(remote),
      localPtyProvider: strip(localRes),
      inProcess: floor,
    },
    errors,
    durationMs: now() - t0,
  };
}
