import type { LinkState, PtyReattachEvent } from '../../provider/contract.js';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { FaultProxy } from '../../test/support/fault-proxy.js';
import { type BenchEnv, hostConfig, knownHostsFor, sshArgs, sshProvider } from '../lib/env.js';
import { runCommandStream, runProviderStream } from '../lib/pty-run.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { median, now, round, sleep, waitFor } from '../lib/util.js';

const FLOOD = ['1', '100000000'];
/** Dead-link detection shortened for the bench (default 15 s); the reconnect ladder is the product's. */
const LINK = { health: { deadAfterMs: 2000, probeIdleMs: 500 } };

/** Bytes `seq` prints for the numbers a..b inclusive, each followed by `\r\n` (tty). */
function bytesOfRange(a: number, b: number): number {
  let total = 0;
  for (let digits = 1, lo = 1; lo <= b; digits++, lo *= 10) {
    const hi = lo * 10 - 1;
    const from = Math.max(a, lo);
    const to = Math.min(b, hi);
    if (to >= from) total += (to - from + 1) * (digits + 2);
  }
  return total;
}

/** Checks that a `seq` stream (through a tty: `N\r\n`) is contiguous: no line lost, none twice. */
class LineChecker {
  last = 0;
  lines = 0;
  lostLines = 0;
  lostBytes = 0;
  duplicates = 0;
  garbage = 0;
  private cur = 0;
  private inLine = false;
  /** After a snapshot reset the stream restarts mid-line: its bytes up to the first LF are skipped. */
  private skipToLf = false;

  /**
   * A snapshot reset: what lies between is lost (counted at the next whole line, not glued to the
   * partial line before it, which once made a bogus huge line number and every later line a
   * "duplicate").
   */
  reset(): void {
    this.cur = 0;
    this.inLine = false;
    this.skipToLf = true;
  }

  push(c: Uint8Array): void {
    for (let i = 0; i < c.length; i++) {
      const b = c[i]!;
      if (this.skipToLf) {
        if (b === 0x0a) this.skipToLf = false;
        continue;
      }
      if (b >= 0x30 && b <= 0x39) {
        this.cur = this.cur * 10 + (b - 0x30);
        this.inLine = true;
      } else if (b === 0x0a) {
        if (this.inLine) this.line(this.cur);
        this.cur = 0;
        this.inLine = false;
      } else if (b !== 0x0d) this.garbage++;
    }
  }

  private line(n: number): void {
    this.lines++;
    if (n === this.last + 1) this.last = n;
    else if (n > this.last + 1) {
      this.lostLines += n - this.last - 1;
      this.lostBytes += bytesOfRange(this.last + 1, n - 1);
      this.last = n;
    } else this.duplicates++;
  }
}

/**
 * `repeat`: a 3 s refused outage, 2 s up, then the measured refused outage — long enough that the
 * ladder alone would wait several seconds past the host's return (the reachability probe's case).
 */
const REPEAT_FIRST_OUTAGE_MS = 3000;
const REPEAT_UP_MS = 2000;
const REPEAT_OUTAGE_MS = 16_000;

interface Trial {
  mode: 'cut' | 'blackhole' | 'repeat';
  outageMs: number;
  /** From the fault to the relay noticing (link state leaves `connected`). */
  detectMs: number | null;
  /** From restore() to the link state `connected` again. */
  restoreToConnectedMs: number | null;
  /** From restore() to the first byte delivered after it. */
  restoreToFirstByteMs: number | null;
  /** The successful attempt: when it started relative to restore() (ladder wait), and how long it took. */
  lastAttemptStartAfterRestoreMs: number | null;
  lastAttemptConnectMs: number | null;
  bytes: number;
  lines: number;
  lastLine: number;
  lostLines: number;
  lostBytes: number;
  duplicates: number;
  garbage: number;
  seqGaps: number;
  reattach: string[];
  states: string[];
}

async function trial(env: BenchEnv, mode: Trial['mode'], outageMs: number, waitMs: number): Promise<Trial> {
  const proxy = await FaultProxy.start({ host: '127.0.0.1', port: env.sshd.port });
  const kh = knownHostsFor(env, proxy.port);
  const p = sshProvider(
    env,
    { h: hostConfig(env.sshd, { port: proxy.port, knownHostsFile: kh }) },
    { link: LINK },
  );
  const checker = new LineChecker();
  const states: { t: number; s: LinkState }[] = [];
  const reattach: PtyReattachEvent[] = [];
  p.onLinkState((e) => states.push({ t: now(), s: e.state }));
  p.onReattach((e) => {
    reattach.push(e);
    if (e.generation === 'reset') checker.reset();
  });
  let restoredAt = 0;
  let firstAfter = 0;
  let finished = false;
  let bytes = 0;
  try {
    await p.listProcesses();
    const stream = runProviderStream(
      p,
      { host: 'h', cols: 80, rows: 24, command: 'seq', args: FLOOD },
      (c) => {
        if (restoredAt && !firstAfter) firstAfter = now();
        bytes += c.length;
        checker.push(c);
      },
      () => finished,
      waitMs + outageMs + 30_000,
    );
    await waitFor(() => bytes > 1_000_000, 10_000, 'flood started');
    await sleep(1000);
    if (mode === 'repeat') {
      proxy.refuse(true);
      proxy.cut();
      await sleep(REPEAT_FIRST_OUTAGE_MS);
      proxy.restore();
      await waitFor(() => states.at(-1)?.s.state === 'connected', waitMs, 'back after the first outage');
      await sleep(REPEAT_UP_MS);
    }
    const faultAt = now();
    if (mode === 'cut' || mode === 'repeat') {
      proxy.refuse(true);
      proxy.cut();
    } else proxy.blackhole();
    await sleep(outageMs);
    proxy.restore();
    restoredAt = now();
    await waitFor(() => firstAfter > 0, waitMs, 'first byte after restore').catch(() => {});
    if (firstAfter) await sleep(1000);
    finished = true;
    const s = await stream;
    await p.shutdown(s.id, { immediate: true }).catch(() => {});
    const detected = states.find((x) => x.t >= faultAt && x.s.state !== 'connected');
    const back = states.find((x) => x.t >= restoredAt && x.s.state === 'connected');
    // The step that started the winning attempt: the last one planned before the link came back
    // (a state is also reported when a step starts an attempt, naming the step after it).
    const lastWait =
      back &&
      states
        .filter((x) => x.t < back.t && x.s.state === 'reconnecting' && x.t + x.s.nextInMs <= back.t)
        .at(-1);
    const attemptAt =
      lastWait && lastWait.s.state === 'reconnecting' ? lastWait.t + lastWait.s.nextInMs : undefined;
    return {
      mode,
      outageMs,
      detectMs: detected ? round(detected.t - faultAt, 1) : null,
      restoreToConnectedMs: back ? round(back.t - restoredAt, 1) : null,
      restoreToFirstByteMs: firstAfter ? round(firstAfter - restoredAt, 1) : null,
      lastAttemptStartAfterRestoreMs: attemptAt === undefined ? null : round(attemptAt - restoredAt, 1),
      lastAttemptConnectMs: attemptAt === undefined || !back ? null : round(back.t - attemptAt, 1),
      bytes,
      lines: checker.lines,
      lastLine: checker.last,
      lostLines: checker.lostLines,
      lostBytes: checker.lostBytes,
      duplicates: checker.duplicates,
      garbage: checker.garbage,
      seqGaps: s.gaps,
      reattach: reattach.map((e) => `${e.generation}${e.sessionExpired ? ' (expired)' : ''}`),
      states: states.map(
        (x) =>
          `${round(x.t - faultAt, 0)} ms: ${x.s.state}${x.s.state === 'reconnecting' ? ` (next in ${x.s.nextInMs} ms; ${x.s.lastError})` : ''}`,
      ),
    };
  } finally {
    await p.dispose();
    await proxy.close();
  }
}

/** What a (re)connect pays for the remote `stub.cjs ensure` exec (a node start) over a bare `ssh host true`. */
async function ensureCost(env: BenchEnv, provider: SshPtyProvider): Promise<Record<string, unknown>> {
  await provider.listProcesses();
  const deploy = provider.linkInfo('h')?.deploy;
  if (!deploy) return {};
  const args = sshArgs(env.sshd, { tty: false });
  const time = async (cmd: string[]) => {
    const xs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await runCommandStream('ssh', [...args, ...cmd], () => {}, 20_000);
      xs.push(r.tLast > 0 ? r.tLast - r.t0 : now() - r.t0);
    }
    return median(xs);
  };
  const bare = await time(['echo', 'ok']);
  const ensure = await time([deploy.nodePath, deploy.stubPath, 'ensure', '--runtime-dir', env.runtimeDir]);
  return { sshEchoMs: round(bare, 1), sshEnsureMs: round(ensure, 1), ensureExtraMs: round(ensure - bare, 1) };
}

/** OpenSSH keeps nothing across a cut: what is lost, and how long a fresh login takes to show output. */
async function sshReference(env: BenchEnv, outageMs: number): Promise<Record<string, unknown>> {
  const proxy = await FaultProxy.start({ host: '127.0.0.1', port: env.sshd.port });
  const kh = knownHostsFor(env, proxy.port);
  try {
    const args = sshArgs(env.sshd, { port: proxy.port, knownHostsFile: kh });
    const checker = new LineChecker();
    let bytes = 0;
    const run = runCommandStream(
      'ssh',
      [...args, 'seq', ...FLOOD],
      (c) => {
        bytes += c.length;
        checker.push(c);
      },
      outageMs + 30_000,
    );
    await waitFor(() => bytes > 1_000_000, 10_000, 'ssh flood started');
    await sleep(1000);
    proxy.refuse(true);
    proxy.cut();
    const res = await run;
    await sleep(outageMs);
    proxy.restore();
    const logins: number[] = [];
    for (let i = 0; i < 3; i++) {
      const restoredAt = now();
      const r = await runCommandStream('ssh', [...args, 'echo', 'resumed'], () => {}, 20_000);
      logins.push(r.tFirst - restoredAt);
    }
    return {
      sessionSurvived: false,
      sshExitCode: res.exitCode,
      linesBeforeCut: checker.lines,
      freshLoginToFirstByteMs: logins.map((x) => round(x, 1)),
      freshLoginMedianMs: round(median(logins), 1),
    };
  } finally {
    await proxy.close();
  }
}

export async function reconnectScenario(env: BenchEnv, provider: SshPtyProvider): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  // 3 s as the issue names it, in quick runs too: a blackhole shorter than dead-link detection
  // (2 s here) only measures the fault proxy's own artifact — it drops the bytes in flight, which
  // desynchronises the SSH stream until the link is declared dead; a real partition loses none.
  const outageMs = 3000;
  const waitMs = env.opts.quick ? 35_000 : 45_000;
  const trials: Trial[] = [];
  // Full runs add a longer blackhole: the relay declares the link dead (≈ deadAfterMs + a health tick)
  // and starts reconnecting while the network is still down.
  const plan: Array<[Trial['mode'], number]> = [
    ['cut', outageMs],
    ['blackhole', outageMs],
    // Full runs also time the recovery after a long outage that follows a short one (≈ 25 s).
    ...(env.opts.quick
      ? []
      : ([
          ['blackhole', 5000],
          ['repeat', REPEAT_OUTAGE_MS],
        ] as Array<[Trial['mode'], number]>)),
  ];
  for (const [mode, outage] of plan) {
    try {
      const t = await trial(env, mode, outage, waitMs);
      trials.push(t);
      if (t.restoreToFirstByteMs === null) errors.push(`${mode}: no byte within ${waitMs} ms of restore`);
      if (t.lostLines || t.duplicates || t.garbage || t.seqGaps)
        errors.push(
          `${mode}: lost ${t.lostLines} lines, ${t.duplicates} duplicates, ${t.garbage} garbage bytes, ${t.seqGaps} seq gaps`,
        );
    } catch (err) {
      errors.push(`${mode}: ${(err as Error).message}`);
    }
  }
  let reference: Record<string, unknown> = {};
  try {
    reference = await sshReference(env, outageMs);
  } catch (err) {
    errors.push(`ssh reference: ${(err as Error).message}`);
  }
  let ensure: Record<string, unknown> = {};
  try {
    ensure = await ensureCost(env, provider);
  } catch (err) {
    errors.push(`ensure cost: ${(err as Error).message}`);
  }
  const refLogin = (reference.freshLoginMedianMs as number | undefined) ?? null;
  const rows: Row[] = [];
  for (const t of trials) {
    rows.push(
      {
        scenario: 'reconnect',
        metric: `${t.mode} ${t.outageMs / 1000} s: restore → first byte`,
        unit: 'ms',
        subject: 'SshPtyProvider',
        value: t.restoreToFirstByteMs,
        reference: { label: 'fresh ssh login (session lost)', value: refLogin },
        better: 'lower',
        // After a long outage the issue's bound is 2 s from the host's return (the probe runs every second).
        target:
          t.mode === 'repeat'
            ? {
                text: '≤ 2000 ms',
                met: t.restoreToFirstByteMs === null ? false : t.restoreToFirstByteMs <= 2000,
              }
            : {
                text: '≤ 500 ms',
                met: t.restoreToFirstByteMs === null ? false : t.restoreToFirstByteMs <= 500,
              },
      },
      {
        scenario: 'reconnect',
        metric: `${t.mode} ${t.outageMs / 1000} s: bytes lost`,
        unit: 'bytes',
        subject: 'SshPtyProvider',
        value: t.restoreToFirstByteMs === null ? null : t.lostBytes,
        reference: { label: 'ssh -tt: session and program lost', value: null },
        noPlot: true,
        better: 'lower',
        note: 'no resume',
        target: {
          text: '= 0, no duplicate',
          met: t.restoreToFirstByteMs !== null && t.lostBytes === 0 && t.duplicates === 0 && t.seqGaps === 0,
        },
      },
    );
  }
  return {
    name: 'reconnect',
    rows,
    details: { outageMs, link: LINK, trials, openssh: reference, ensureExec: ensure },
    errors,
    durationMs: now() - t0,
  };
}
