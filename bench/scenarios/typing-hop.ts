import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { FaultProxy } from '../../test/support/fault-proxy.js';
import { type EchoTarget, nodePtyTarget, providerTarget, RAW_CAT } from '../lib/echo-target.js';
import { type BenchEnv, hostConfig, knownHostsFor, sshArgs, sshProvider } from '../lib/env.js';
import type { Row, ScenarioResult } from '../lib/results.js';
import { now, round, sleep, summarize } from '../lib/util.js';

const VIA_JUMP = 'via ProxyJump';
/** Each way: a path across a country. */
const ONE_WAY_MS = 25;
/** Keystrokes per block; blocks alternate between the targets so both see the same machine. */
const BLOCK_KEYS = 10;
const GAP_MS = 10;
const WARMUP_KEYS = 5;
/** Issue 23's targets: echo p50 ≤ ssh + 2 ms; segments per keystroke ≤ OpenSSH's + 10 %. */
const P50_MARGIN_MS = 2;
const SEGMENT_MARGIN = 1.1;

interface HopCounts {
  latencies: number[];
  lost: number;
  keys: number;
  up: number;
  down: number;
}

/**
 * Typing through a TCP hop that adds 25 ms each way and leaves Nagle on for its own sockets (as
 * bastions, ProxyJump forwarders and corporate proxies do), next to `ssh -tt` through the same
 * hop: echo latency, and segments per keystroke each way counted at the hop (its reads; one key
 * at a time, so segments do not merge).
 */
export async function typingHopScenario(env: BenchEnv): Promise<ScenarioResult> {
  const t0 = now();
  const errors: string[] = [];
  const keys = env.opts.quick ? 40 : 200;
  const proxy = await FaultProxy.start({ host: '127.0.0.1', port: env.sshd.port }, { nagle: true });
  const kh = knownHostsFor(env, proxy.port);
  // Direct through the hop, and through a jump host behind it: the jump's sshd forwards with
  // direct-tcpip, and its socket toward us carries no session, so it keeps Nagle on (≤ 10.0).
  const provider: SshPtyProvider = sshProvider(env, {
    h: hostConfig(env.sshd, { port: proxy.port, knownHostsFile: kh }),
    jump: hostConfig(env.sshd, { port: proxy.port, knownHostsFile: kh }),
    viaJump: hostConfig(env.sshd, { proxyJump: 'jump' }),
  });
  const jumpCommand = sshArgs(env.sshd, { port: proxy.port, knownHostsFile: kh })
    .filter((a) => a !== '-tt')
    .concat('-W', '%h:%p');
  const targets: EchoTarget[] = [];
  const counts = new Map<string, HopCounts>();
  try {
    targets.push(await providerTarget('SshPtyProvider', provider, 'h'));
    targets.push(
      nodePtyTarget('ssh -tt', 'ssh', [
        ...sshArgs(env.sshd, { port: proxy.port, knownHostsFile: kh }),
        RAW_CAT,
      ]),
    );
    targets.push(await providerTarget(`SshPtyProvider ${VIA_JUMP}`, provider, 'viaJump'));
    targets.push(
      nodePtyTarget(`ssh -tt ${VIA_JUMP}`, 'ssh', [
        '-o',
        `ProxyCommand=ssh ${jumpCommand.join(' ')}`,
        ...sshArgs(env.sshd),
        RAW_CAT,
      ]),
    );
    for (const t of targets) {
      await t.waitReady();
      counts.set(t.label, { latencies: [], lost: 0, keys: 0, up: 0, down: 0 });
    }
    proxy.delay(ONE_WAY_MS);
    for (const t of targets) for (let i = 0; i < WARMUP_KEYS; i++) await t.burst('w', 0);
    for (let done = 0; done < keys; done += BLOCK_KEYS) {
      for (const t of targets) {
        const c = counts.get(t.label)!;
        await sleep(GAP_MS);
        const s0 = proxy.stats();
        for (let i = 0; i < BLOCK_KEYS; i++) {
          const [x] = await t.burst(String.fromCharCode(0x61 + ((done + i) % 26)), 0);
          if (x === undefined) c.lost++;
          else c.latencies.push(x);
          await sleep(GAP_MS);
        }
        const s1 = proxy.stats();
        c.keys += BLOCK_KEYS;
        c.up += s1.readsUp - s0.readsUp;
        c.down += s1.readsDown - s0.readsDown;
      }
    }
  } finally {
    for (const t of targets) await t.close();
    await provider.dispose();
    await proxy.close();
  }
  for (const [label, c] of counts)
    if (c.lost > 0) errors.push(`${label}: ${c.lost} keystrokes never came back`);
  const stat = (label: string) => {
    const c = counts.get(label);
    if (!c || c.keys === 0) return undefined;
    const s = summarize(c.latencies);
    return {
      p50: round(s.p50, 2),
      p99: round(s.p99, 2),
      up: round(c.up / c.keys, 2),
      down: round(c.down / c.keys, 2),
    };
  };
  const rows: Row[] = [];
  for (const via of ['', ` ${VIA_JUMP}`])
    rows.push(...hopRows(stat(`SshPtyProvider${via}`), stat(`ssh -tt${via}`), via));
  return {
    name: 'typing-hop',
    rows,
    details: {
      oneWayMs: ONE_WAY_MS,
      nagle: true,
      keys,
      stats: Object.fromEntries([...counts.keys()].map((l) => [l, stat(l)])),
      raw: Object.fromEntries([...counts].map(([l, c]) => [l, c.latencies.map((x) => round(x, 2))])),
    },
    errors,
    durationMs: now() - t0,
  };
}

type HopStat = { p50: number; p99: number; up: number; down: number } | undefined;

function hopRows(ours: HopStat, ssh: HopStat, via: string): Row[] {
  const met = (ok: (a: NonNullable<HopStat>, b: NonNullable<HopStat>) => boolean) =>
    ours && ssh ? ok(ours, ssh) : null;
  const hop = `${2 * ONE_WAY_MS} ms RTT hop, Nagle on${via}`;
  return [
    {
      scenario: 'typing-hop',
      metric: `${hop}: keystroke echo p50`,
      unit: 'ms',
      subject: `SshPtyProvider${via}`,
      value: ours?.p50 ?? null,
      reference: { label: `ssh -tt${via}`, value: ssh?.p50 ?? null },
      better: 'lower',
      target: { text: `≤ ssh + ${P50_MARGIN_MS} ms`, met: met((a, b) => a.p50 <= b.p50 + P50_MARGIN_MS) },
    },
    {
      scenario: 'typing-hop',
      metric: `${hop}: keystroke echo p99`,
      unit: 'ms',
      subject: `SshPtyProvider${via}`,
      value: ours?.p99 ?? null,
      reference: { label: `ssh -tt${via}`, value: ssh?.p99 ?? null },
      better: 'lower',
    },
    ...(['up', 'down'] as const).map(
      (dir): Row => ({
        scenario: 'typing-hop',
        metric: `${hop}: segments per keystroke ${dir}`,
        unit: 'segments',
        subject: `SshPtyProvider${via}`,
        value: ours?.[dir] ?? null,
        reference: { label: `ssh -tt${via}`, value: ssh?.[dir] ?? null },
        better: 'lower',
        target: { text: '≤ OpenSSH + 10 %', met: met((a, b) => a[dir] <= b[dir] * SEGMENT_MARGIN) },
      }),
    ),
  ];
}
