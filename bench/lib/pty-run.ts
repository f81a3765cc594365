import { spawn } from 'node:child_process';
import type { IPtyProvider, PtyDataEvent, PtySpawnOptions } from '../../provider/contract.js';
import { now } from './util.js';

/** What a consumer saw of one stream. */
export interface StreamStats {
  bytes: number;
  /** performance.now() of the start, the first and the last byte. */
  t0: number;
  tFirst: number;
  tLast: number;
  /** Seq discontinuities (provider streams only). */
  gaps: number;
  exitCode?: number;
}

export type ChunkSink = (chunk: Uint8Array) => void;

/** Counts a chunk a consumer received into `s` (its bytes, the times of the first and last). */
export function tally(s: StreamStats, chunk: Uint8Array): void {
  const t = now();
  if (s.bytes === 0) s.tFirst = t;
  s.tLast = t;
  s.bytes += chunk.length;
}

/**
 * Runs `opts` through a provider and feeds every byte of the new session (spawn replay first, then
 * live events, checking seq contiguity) to `sink`, until `until()` says enough or the process exits.
 */
export async function runProviderStream(
  p: IPtyProvider,
  opts: PtySpawnOptions,
  sink: ChunkSink,
  until: (s: StreamStats) => boolean,
  timeoutMs: number,
): Promise<StreamStats & { id: string }> {
  const s: StreamStats = { bytes: 0, t0: 0, tFirst: 0, tLast: 0, gaps: 0 };
  let id: string | undefined;
  let nextSeq = 0;
  let exited = false;
  const early: PtyDataEvent[] = [];
  let wake: () => void = () => {};
  const take = (data: Uint8Array, seq: number) => {
    if (seq !== nextSeq) s.gaps++;
    nextSeq = seq + data.length;
    if (data.length === 0) return;
    tally(s, data);
    sink(data);
    if (until(s)) wake();
  };
  const offData = p.onData((e) => {
    if (id === undefined) early.push(e);
    else if (e.id === id) take(e.data, e.seq);
  });
  const offExit = p.onExit((e) => {
    if (e.id !== id) return;
    exited = true;
    s.exitCode = e.exitCode;
    wake();
  });
  try {
    s.t0 = now();
    const r = await p.spawn(opts);
    id = r.id;
    const replay = r.replay ?? new Uint8Array(0);
    nextSeq = r.providerSequence.value - replay.length;
    if (replay.length > 0) take(replay, nextSeq);
    for (const e of early.splice(0)) if (e.id === id) take(e.data, e.seq);
    if (r.exited) {
      exited = true;
      s.exitCode = r.exited.exitCode;
    }
    const deadline = s.t0 + timeoutMs;
    while (!until(s) && !exited && now() < deadline) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, Math.min(200, Math.max(1, deadline - now())));
      });
    }
    // Bytes may still be in flight when the exit event overtakes them (it does not here, but be sure).
    if (exited && !until(s)) {
      const grace = now() + 1000;
      while (!until(s) && now() < grace) await new Promise((r) => setTimeout(r, 10));
    }
    return { ...s, id };
  } finally {
    offData();
    offExit();
  }
}

/** Runs a local command (e.g. the OpenSSH client) with stdout piped to `sink` until it exits. */
export function runCommandStream(
  file: string,
  args: string[],
  sink: ChunkSink,
  timeoutMs: number,
): Promise<StreamStats & { stderr: string }> {
  return new Promise((resolve, reject) => {
    const s: StreamStats = { bytes: 0, t0: now(), tFirst: 0, tLast: 0, gaps: 0 };
    // stdin stays an open pipe: EOF would reach the remote tty as a hangup-ish end of input.
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${file} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout.on('data', (c: Buffer) => {
      tally(s, c);
      sink(c);
    });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 4096) stderr += c.toString();
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ ...s, exitCode: code ?? -1, stderr });
    });
  });
}
