import type { IPtyProvider } from '../../provider/contract.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { type BenchEnv, localProvider } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, round, waitFor } from '../lib/util.js';

/** Queries asked one after the other, each once its answer came. */
const ASKS = 200;
const TARGET_P99_MS = 50;

/**
 * A program in the terminal asks DA1 (`ESC[c`) and, in turn, the cursor position (`ESC[6n`), each
 * only after the last answer came, and times each answer with its own clock: what a program
 * waiting on a query sees (the stub answers from its screen model; nobody watches).
 */
const PROGRAM = `
const n = ${ASKS}; const lat = []; let got = ''; let t0 = 0n; let i = 0;
process.stdin.setRawMode(true);
const next = () => {
  if (i >= n) {
    lat.sort((a, b) => a - b);
    const q = (p) => lat[Math.min(n - 1, Math.floor(n * p))];
    process.stdout.write('\\r\\nLAT ' + JSON.stringify({ n, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: lat[n - 1] }) + '\\r\\n');
    process.stdin.setRawMode(false);
    process.exit(0);
  }
  t0 = process.hrtime.bigint();
  process.stdout.write(i++ % 2 ? '\\x1b[6n' : '\\x1b[c');
};
process.stdin.on('data', (d) => {
  got += d.toString('latin1');
  if (!/[cR]$/.test(got)) return;
  lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
  got = '';
  next();
});
next();
`;

interface Latency {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

async function timeAnswers(p: IPtyProvider, host: string | undefined): Promise<Latency> {
  let id: string | undefined;
  let text = '';
  const off = p.onData((e) => {
    if (e.id === id) text += Buffer.from(e.data).toString('latin1');
  });
  const r = await p.spawn({ host, cols: 80, rows: 24, command: 'node', args: ['-e', PROGRAM] });
  id = r.id;
  if (r.replay) text += Buffer.from(r.replay).toString('latin1');
  try {
    const line = await waitFor(() => /LAT (\{[^}]*\})/.exec(text)?.[1], 60_000, 'the answers');
    return JSON.parse(line) as Latency;
  } finally {
    off();
    await p.shutdown(r.id, { immediate: true }).catch(() => {});
  }
}

export async function queriesScenario(env: BenchEnv, provider: SshPtyProvider): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const remote = await timeAnswers(provider, 'h');
  const local = await localProvider(env);
  let localLat: Latency | undefined;
  try {
    localLat = await timeAnswers(local, undefined);
  } catch (err) {
    errors.push(`LocalPtyProvider: ${(err as Error).message}`);
  } finally {
    await local.shutdownDaemon().catch(() => {});
    await local.dispose();
  }
  const row = (subject: string, l: Latency | undefined, q: 'p50' | 'p99'): Row => ({
    scenario: 'queries',
    metric: `terminal query answer (DA1, CPR) ${q}`,
    unit: 'ms',
    subject,
    value: l ? round(l[q], 2) : null,
    better: 'lower',
    ...(q === 'p99'
      ? { target: { text: `≤ ${TARGET_P99_MS} ms`, met: l ? l.p99 <= TARGET_P99_MS : null } }
      : {}),
  });
  return {
    name: 'queries',
    rows: [
      row('SshPtyProvider (the stub on the host answers)', remote, 'p50'),
      row('SshPtyProvider (the stub on the host answers)', remote, 'p99'),
      row('LocalPtyProvider', localLat, 'p50'),
      row('LocalPtyProvider', localLat, 'p99'),
    ],
    details: { remote, local: localLat },
    errors,
    durationMs: now() - t0,
  };
}
