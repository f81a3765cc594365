import { openSync, writeSync } from 'node:fs';
import * as pty from 'node-pty';
import type { IPtyProvider } from '../../provider/contract.js';
import { now, sleep, waitFor } from './util.js';

/** Raw mode without echo: every byte typed comes back exactly once, from cat. */
export const RAW_CAT = 'stty raw -echo; printf READY; exec cat';
const READY = 'READY';
/**
 * BENCH_MARKS=1: writes to /dev/null a system-call trace (perf) can place each hop against: for
 * SshPtyProvider 7771 bytes when a paste is written and 7772 per chunk of its echo, 7773 per key
 * of a burst and 8000 + n per chunk of n echoed bytes (ssh -tt's pastes: 7781, 7782).
 */
const markFd = process.env.BENCH_MARKS === '1' ? openSync('/dev/null', 'w') : undefined;
const mark = (n: number): void => {
  if (markFd !== undefined && n > 0) writeSync(markFd, Buffer.alloc(n));
};
/** A byte that has not come back after this long counts as lost. */
const ECHO_TIMEOUT_MS = 2000;

/**
 * One place to type into and read back from. It counts bytes: `cat` in raw mode returns each
 * byte exactly once, in order, so the k-th byte back is the echo of the k-th byte typed.
 */
export class EchoTarget {
  write: (data: string) => void = () => {};
  close: () => Promise<void> = async () => {};
  private ready = false;
  private head = '';
  private got = 0;
  /** Arrival time of each byte since the current measurement began (index: byte number). */
  private arrivals: number[] = [];
  private base = 0;
  /** Arrival (ms since the paste was written) and size of each chunk of the last paste's echo. */
  lastPasteChunks: [number, number][] = [];
  private pasteAt: number | undefined;
  /** Whether this is the provider the system-call marks are for (see `mark`). */
  private readonly marked: boolean;

  constructor(readonly label: string) {
    this.marked = label === 'SshPtyProvider';
  }

  /** Runs in the data callback, so the time is when the bytes are handed to the consumer. */
  feed(chunk: string): void {
    if (!this.ready) {
      this.head += chunk;
      const at = this.head.indexOf(READY);
      if (at < 0) return;
      this.ready = true;
      chunk = this.head.slice(at + READY.length);
      if (chunk.length === 0) return;
    }
    const t = now();
    // Every call and sum runs for every target, marked or not: the warm-up (warmHarness) then
    // leaves V8 nothing it has not seen, and nothing to throw away when the provider comes.
    const echoMark = 8000 + chunk.length;
    if (this.pasteAt === undefined) mark(this.marked ? echoMark : 0);
    else {
      this.lastPasteChunks.push([t - this.pasteAt, chunk.length]);
      mark(this.marked ? 7772 : 7782);
    }
    for (let i = 0; i < chunk.length; i++) this.arrivals.push(t);
    this.got += chunk.length;
  }

  waitReady(): Promise<unknown> {
    return waitFor(() => this.ready, 15_000, `${this.label} ready`);
  }

  /**
   * Types `keys` bytes `spacingMs` apart (not waiting for echoes) and returns each one's echo
   * latency (ms), or undefined for any that never came back.
   */
  async burst(keys: string, spacingMs: number): Promise<(number | undefined)[]> {
    this.begin();
    const sentAt: number[] = [];
    const t0 = now();
    for (let i = 0; i < keys.length; i++) {
      // Timers only (no spinning: the relay of the provider targets runs on this thread).
      const wait = t0 + i * spacingMs - now();
      if (wait > 0) await sleep(wait);
      sentAt.push(now());
      mark(this.marked ? 7773 : 0);
      this.write(keys[i]!);
    }
    await this.settle(keys.length);
    return sentAt.map((t, i) => (this.arrivals[i] === undefined ? undefined : this.arrivals[i]! - t));
  }

  /** Writes `data` at once and returns the time until its last byte came back (ms). */
  async paste(data: string): Promise<number | undefined> {
    this.begin();
    this.lastPasteChunks = [];
    const t0 = now();
    this.pasteAt = t0;
    mark(this.marked ? 7771 : 7781);
    this.write(data);
    await this.settle(data.length);
    this.pasteAt = undefined;
    const last = this.arrivals[data.length - 1];
    return last === undefined ? undefined : last - t0;
  }

  private begin(): void {
    this.base = this.got;
    this.arrivals = [];
  }

  private async settle(n: number): Promise<void> {
    const deadline = now() + ECHO_TIMEOUT_MS;
    while (this.got - this.base < n && now() < deadline) await sleep(1);
  }
}

export async function providerTarget(label: string, p: IPtyProvider, host?: string): Promise<EchoTarget> {
  const t = new EchoTarget(label);
  let id: string | undefined;
  const decoder = new TextDecoder();
  const off = p.onData((e) => {
    if (e.id === id || id === undefined) t.feed(decoder.decode(e.data, { stream: true }));
  });
  const r = await p.spawn({ host, cols: 80, rows: 24, command: 'sh', args: ['-c', RAW_CAT] });
  id = r.id;
  if (r.replay) t.feed(decoder.decode(r.replay, { stream: true }));
  t.write = (data) => {
    p.write(r.id, data).catch(() => {});
  };
  t.close = async () => {
    off();
    await p.shutdown(r.id, { immediate: true }).catch(() => {});
  };
  return t;
}

export function nodePtyTarget(label: string, file: string, args: string[]): EchoTarget {
  const t = new EchoTarget(label);
  const proc = pty.spawn(file, args, {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    cwd: '/',
    env: process.env as Record<string, string>,
  });
  proc.onData((d) => t.feed(d));
  t.write = (data) => proc.write(data);
  t.close = async () => {
    proc.kill('SIGKILL');
  };
  return t;
}

/** Keys and pastes the harness warm-up types into its in-process echoes (about 2 s). */
const WARM_KEYS = 2000;
const WARM_BURST = 50;
const WARM_PASTES = 40;

/**
 * Echoes of six kinds, as many as the scenario's targets: the measuring code's call to `write`
 * sees as many different functions in the warm-up as later, so V8 does not throw away what it
 * optimized for one function when the real targets come (it did with a single echo).
 */
const WARM_ECHOES: Array<(t: EchoTarget) => (data: string) => void> = [
  (t) => (d) => setImmediate(() => t.feed(d)),
  (t) => (d) => queueMicrotask(() => t.feed(d)),
  (t) => (d) => process.nextTick(() => t.feed(d)),
  (t) => (d) => setTimeout(() => t.feed(d), 0),
  (t) => (d) => void Promise.resolve(d).then((x) => t.feed(x)),
  (t) => (d) => setImmediate(() => process.nextTick(() => t.feed(d))),
];

/**
 * Types into in-process echoes with the measuring code itself (burst, paste, feed, settle) until
 * V8 has optimized that code, before any target is measured. The harness runs in the process of
 * the provider it measures: traced runs showed V8 compiling `burst` (8 ms of TurboFan) during the
 * provider's 160th key 2 ms apart in every run, which delayed that key and the next. Nothing of
 * the product runs here.
 */
export async function warmHarness(paste: string): Promise<void> {
  const targets = WARM_ECHOES.map((echo, i) => {
    const t = new EchoTarget(`harness warm-up ${i}`);
    t.write = echo(t);
    t.feed(READY);
    return t;
  });
  let text = '';
  for (let i = 0; i < WARM_BURST; i++) text += String.fromCharCode(0x61 + (i % 26));
  for (let k = 0; k < WARM_KEYS; k += WARM_BURST * targets.length) {
    for (const t of targets) {
      for (let i = 0; i < WARM_BURST; i++) await t.burst(text[i]!, 0);
      await t.burst(text, 1);
    }
  }
  for (let n = 0; n < WARM_PASTES; n++) for (const t of targets) await t.paste(paste);
}
