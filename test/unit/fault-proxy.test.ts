import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';

const HOST = '127.0.0.1';
const MiB = 1024 * 1024;
const PASS_THROUGH_BYTES = 20 * MiB;
const WRITE_CHUNK = 64 * 1024;
/** Bytes the client tries to push at a target that never reads. */
const FLOOD_BYTES = 96 * MiB;
/** How much of the flood the whole path (kernel buffers + proxy) may absorb. */
const FLOOD_ABSORB_LIMIT = 32 * MiB;
const SETTLE_MS = 300;
/** A write not completing within this long counts as stalled by backpressure. */
const STALL_MS = 200;
const DELAY_MS = 200;
const THROTTLE_RATE = 100_000;
const THROTTLE_BYTES = 300_000;

interface Target {
  server: Server;
  port: number;
  sockets: Set<Socket>;
  /** Total bytes the target received. */
  received(): number;
  close(): Promise<void>;
}

/** An echo server on 127.0.0.1 (or, with `sink`, one that never reads). */
async function startTarget(sink = false): Promise<Target> {
  const sockets = new Set<Socket>();
  let received = 0;
  const server = createServer({ allowHalfOpen: true, pauseOnConnect: sink }, (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    if (sink) return;
    sock.on('data', (d: Buffer) => {
      received += d.length;
      if (!sock.write(d)) {
        sock.pause();
        sock.once('drain', () => sock.resume());
      }
    });
    sock.on('end', () => sock.end());
  });
  server.listen(0, HOST);
  await once(server, 'listening');
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no address');
  return {
    server,
    port: addr.port,
    sockets,
    received: () => received,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function dial(port: number): Promise<Socket> {
  const sock = connect({ host: HOST, port });
  await once(sock, 'connect');
  return sock;
}

/** Resolves with the first `n` bytes `sock` receives. */
function readN(sock: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let got = 0;
    const onData = (d: Buffer) => {
      parts.push(d);
      got += d.length;
      if (got >= n) {
        sock.off('data', onData);
        sock.off('error', reject);
        resolve(Buffer.concat(parts).subarray(0, n));
      }
    };
    sock.on('data', onData);
    sock.once('error', reject);
  });
}

/** Writes `total` bytes of a deterministic pattern honouring backpressure; returns its sha256. */
async function writePattern(sock: Socket, total: number): Promise<string> {
  const hash = createHash('sha256');
  const chunk = Buffer.alloc(WRITE_CHUNK);
  for (let sent = 0, seq = 0; sent < total; seq++) {
    const n = Math.min(WRITE_CHUNK, total - sent);
    for (let i = 0; i < n; i += 4) chunk.writeUInt32LE((seq * WRITE_CHUNK + i) >>> 0, i);
    const piece = Buffer.from(chunk.subarray(0, n));
    hash.update(piece);
    sent += n;
    if (!sock.write(piece)) await once(sock, 'drain');
  }
  return hash.digest('hex');
}

/**
 * Writes one chunk at a time (so completions are per chunk, not per writev batch) until `total`
 * bytes are accepted or a write stalls for `stallMs`; returns the bytes accepted.
 */
async function pushUntilStalled(sock: Socket, total: number, stallMs: number): Promise<number> {
  const chunk = Buffer.alloc(WRITE_CHUNK);
  let accepted = 0;
  while (accepted < total) {
    let timer: NodeJS.Timeout | undefined;
    const ok = await new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), stallMs);
      sock.write(chunk, (err) => resolve(!err));
    });
    clearTimeout(timer);
    if (!ok) break;
    accepted += chunk.length;
  }
  return accepted;
}

/** Reads `total` bytes and returns their sha256. */
function hashIncoming(sock: Socket, total: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let got = 0;
    sock.on('data', (d: Buffer) => {
      hash.update(d);
      got += d.length;
      if (got >= total) resolve(hash.digest('hex'));
    });
    sock.once('error', reject);
    sock.once('close', () => got < total && reject(new Error(`closed after ${got} bytes`)));
  });
}

async function roundTrip(sock: Socket, msg: string): Promise<number> {
  const t0 = performance.now();
  const reply = readN(sock, msg.length);
  sock.write(msg);
  expect((await reply).toString()).toBe(msg);
  return performance.now() - t0;
}

/** Resolves with how `sock` ended: an error code, 'hadError' or 'clean'. */
function closeOutcome(sock: Socket): Promise<string> {
  return new Promise((resolve) => {
    let code: string | undefined;
    sock.once('error', (e: NodeJS.ErrnoException) => {
      code = e.code ?? 'error';
    });
    sock.once('close', (hadError) => resolve(code ?? (hadError ? 'hadError' : 'clean')));
  });
}

/** Resolves when `sock` closes, whatever the reason (unlike events.once, errors don't reject). */
function closed(sock: Socket): Promise<void> {
  sock.on('error', () => {});
  return new Promise((resolve) => sock.once('close', () => resolve()));
}

function liveHandles(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap' || r === 'TCPServerWrap')
    .length;
}

/** The TCP handle count once sockets closed by earlier tests have finished closing. */
async function settledHandles(): Promise<number> {
  let last = liveHandles();
  for (let stable = 0, i = 0; stable < 3 && i < 100; i++) {
    await sleep(10);
    const now = liveHandles();
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
  return last;
}

describe('FaultProxy', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  async function setup(sink = false): Promise<{ target: Target; proxy: FaultProxy }> {
    const target = await startTarget(sink);
    cleanups.push(() => target.close());
    const proxy = await FaultProxy.start({ host: HOST, port: target.port });
    cleanups.push(() => proxy.close());
    return { target, proxy };
  }

  async function client(proxy: FaultProxy): Promise<Socket> {
    const sock = await dial(proxy.port);
    cleanups.push(() => sock.destroy());
    return sock;
  }

  it('passes 20 MB through byte-exact and counts bytes', async () => {
    const { proxy } = await setup();
    const sock = await client(proxy);
    const t0 = performance.now();
    const [sent, got] = await Promise.all([
      writePattern(sock, PASS_THROUGH_BYTES),
      hashIncoming(sock, PASS_THROUGH_BYTES),
    ]);
    const secs = (performance.now() - t0) / 1000;
    expect(got).toBe(sent);
    console.log(
      `fault-proxy echo: ${((2 * PASS_THROUGH_BYTES) / MiB / secs).toFixed(0)} MiB/s through proxy`,
    );
    expect(proxy.stats()).toMatchObject({
      connections: 1,
      active: 1,
      bytesUp: PASS_THROUGH_BYTES,
      bytesDown: PASS_THROUGH_BYTES,
      cuts: 0,
    });
  });

  it.each([
    ['pass-through', 0],
    ['delay', 1_000],
  ])('applies backpressure to a client of a target that never reads (%s)', async (_mode, delayMs) => {
    const { proxy } = await setup(true);
    proxy.delay(delayMs);
    const sock = await client(proxy);
    const absorbed = await pushUntilStalled(sock, FLOOD_BYTES, STALL_MS);
    expect(absorbed).toBeGreaterThan(0);
    expect(absorbed).toBeLessThan(FLOOD_ABSORB_LIMIT);
    expect(proxy.stats().bytesUp).toBeLessThan(FLOOD_ABSORB_LIMIT);
  });

  it('propagates half-close and resets clients when the target is down', async () => {
    const { target, proxy } = await setup();
    const sock = await client(proxy);
    const reply = readN(sock, 3);
    const ended = new Promise<void>((resolve) => sock.once('end', () => resolve()));
    sock.end('bye');
    expect((await reply).toString()).toBe('bye');
    await ended;
    await closed(sock);
    await target.close();
    const orphan = await client(proxy);
    expect(['ECONNRESET', 'hadError', 'clean']).toContain(await closeOutcome(orphan));
    for (let i = 0; i < 50 && proxy.stats().active > 0; i++) await sleep(10);
    expect(proxy.stats().active).toBe(0);
  });

  it('cut() resets both ends', async () => {
    const { target, proxy } = await setup();
    const sock = await client(proxy);
    await roundTrip(sock, 'hello');
    const [serverSide] = target.sockets;
    const serverClosed = closed(serverSide!);
    const outcome = closeOutcome(sock);
    proxy.cut();
    expect(['ECONNRESET', 'hadError']).toContain(await outcome);
    await serverClosed;
    expect(proxy.stats()).toMatchObject({ cuts: 1, active: 0 });
    // New connections still work.
    await roundTrip(await client(proxy), 'again');
  });

  it('blackhole() drops bytes but keeps sockets open until restore()', async () => {
    const { target, proxy } = await setup();
    const sock = await client(proxy);
    await roundTrip(sock, 'before');
    const seenByTarget = target.received();
    proxy.blackhole();
    let leaked = 0;
    const onData = (d: Buffer) => {
      leaked += d.length;
    };
    sock.on('data', onData);
    sock.write('lost bytes');
    const late = await client(proxy);
    late.write('also lost');
    await sleep(SETTLE_MS);
    sock.off('data', onData);
    expect(leaked).toBe(0);
    expect(target.received()).toBe(seenByTarget);
    expect(sock.destroyed).toBe(false);
    expect(late.destroyed).toBe(false);
    expect(proxy.stats().active).toBe(2);
    proxy.restore();
    await roundTrip(sock, 'after');
    await roundTrip(late, 'late');
    expect(target.received()).toBe(seenByTarget + 'after'.length + 'late'.length);
  });

  it('delay() adds latency each way and keeps order', async () => {
    const { proxy } = await setup();
    const sock = await client(proxy);
    const base = await roundTrip(sock, 'warm');
    proxy.delay(DELAY_MS);
    const msgs = Array.from({ length: 50 }, (_, i) => `m${i};`).join('');
    const reply = readN(sock, msgs.length);
    const t0 = performance.now();
    for (let i = 0; i < msgs.length; i += 5) sock.write(msgs.slice(i, i + 5));
    expect((await reply).toString()).toBe(msgs);
    const rtt = performance.now() - t0;
    expect(rtt).toBeGreaterThanOrEqual(2 * DELAY_MS - 5);
    expect(rtt).toBeLessThan(2 * DELAY_MS + 600);
    proxy.restore();
    expect(await roundTrip(sock, 'fast')).toBeLessThan(DELAY_MS + base);
  });

  it('throttle() limits bandwidth', async () => {
    const { proxy } = await setup();
    const sock = await client(proxy);
    proxy.throttle(THROTTLE_RATE);
    const t0 = performance.now();
    const [sent, got] = await Promise.all([
      writePattern(sock, THROTTLE_BYTES),
      hashIncoming(sock, THROTTLE_BYTES),
    ]);
    const secs = (performance.now() - t0) / 1000;
    expect(got).toBe(sent);
    expect(secs).toBeGreaterThanOrEqual(2.5);
    expect(secs).toBeLessThan(4.5);
  });

  it('refuse() resets new connections but leaves existing ones alone', async () => {
    const { proxy } = await setup();
    const existing = await client(proxy);
    proxy.refuse(true);
    const refused = connect({ host: HOST, port: proxy.port });
    cleanups.push(() => refused.destroy());
    let echoed = 0;
    refused.on('data', (d: Buffer) => {
      echoed += d.length;
    });
    const outcome = closeOutcome(refused);
    refused.write('anyone?');
    expect(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'hadError', 'clean']).toContain(await outcome);
    expect(echoed).toBe(0);
    await roundTrip(existing, 'still here');
    proxy.refuse(false);
    await roundTrip(await client(proxy), 'welcome');
    expect(proxy.stats().connections).toBe(2);
  });

  it('close() tears everything down without leaking handles or timers', async () => {
    const target = await startTarget();
    cleanups.push(() => target.close());
    const baseline = await settledHandles();
    const proxy = await FaultProxy.start({ host: HOST, port: target.port });
    const a = await dial(proxy.port);
    const b = await dial(proxy.port);
    await roundTrip(a, 'x');
    proxy.delay(10_000);
    proxy.throttle(1);
    a.write('pending forever');
    const closes = [closed(a), closed(b)];
    await proxy.close();
    await Promise.all(closes);
    await proxy.close(); // idempotent
    expect(proxy.stats().active).toBe(0);
    for (let i = 0; i < 50 && (target.sockets.size > 0 || liveHandles() > baseline); i++) await sleep(10);
    expect(target.sockets.size).toBe(0);
    expect(liveHandles()).toBe(baseline);
    await expect(dial(proxy.port)).rejects.toThrow();
  });
});
