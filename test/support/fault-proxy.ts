import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** Loopback address the proxy listens on. */
const LISTEN_HOST = '127.0.0.1';
/** Upper bound on bytes held in one direction's delay queue before the source socket is paused. */
const MAX_QUEUED_BYTES = 4 * 1024 * 1024;
/** Bytes a stalled direction reads before it pauses its source (like a peer's full receive window). */
const STALL_QUEUE_BYTES = 64 * 1024;
/** Lower bound on the throttled queue limit, so tiny rates still make progress in whole chunks. */
const MIN_THROTTLE_QUEUE_BYTES = 64 * 1024;
/** Throttled directions queue at most this many seconds' worth of bytes before pausing the source. */
const THROTTLE_QUEUE_SECONDS = 1;
/** Token-bucket burst size, as seconds' worth of the configured rate. */
const BURST_SECONDS = 0.1;
/** Shortest timer the pump schedules, in ms. */
const MIN_TIMER_MS = 1;

/** Counters reported by {@link FaultProxy.stats}. */
export interface FaultProxyStats {
  /** Connections accepted and proxied since start (refused ones excluded). */
  connections: number;
  /** Proxied connections with at least one socket still open. */
  active: number;
  /** Bytes handed to the target (client → target). Dropped bytes are not counted. */
  bytesUp: number;
  /** Bytes handed to the client (target → client). Dropped bytes are not counted. */
  bytesDown: number;
  /** Connections reset by {@link FaultProxy.cut}. */
  cuts: number;
  /** Reads from clients (client → target): with small, spaced writes, one per TCP segment. */
  readsUp: number;
  /** Reads from the target (target → client). */
  readsDown: number;
}

/** The proxy-wide fault settings every pipe consults. */
interface Faults {
  blackholed: boolean;
  /** Bytes are held, not forwarded: the sources are paused once a little is queued (a frozen path). */
  stalled: boolean;
  delayMs: number;
  /** Bytes per second per direction; 0 means unlimited. */
  rate: number;
}

function noop(): void {}

function reset(sock: Socket): void {
  if (sock.destroyed) return;
  try {
    sock.resetAndDestroy();
  } catch {
    sock.destroy();
  }
}

/** One direction of a proxied connection: reads `src`, applies the faults, writes `dst`. */
class Pipe {
  /** Chunks waiting for their delay or tokens; `at` is performance.now() on arrival. */
  private queue: { data: Buffer; at: number }[] = [];
  private queued = 0;
  /** Waiting for `dst` to drain. */
  private blocked = false;
  private pausedByUs = false;
  private srcEnded = false;
  private endSent = false;
  private dead = false;
  private timer: NodeJS.Timeout | undefined;
  private tokens = 0;
  private lastRefill = 0;

  constructor(
    private readonly src: Socket,
    private readonly dst: Socket,
    private readonly faults: Faults,
    private readonly stats: FaultProxyStats,
    private readonly counter: 'bytesUp' | 'bytesDown',
    private readonly reads: 'readsUp' | 'readsDown',
  ) {
    this.resetBucket();
    src.on('data', (chunk: Buffer) => this.onData(chunk));
    src.on('end', () => {
      this.srcEnded = true;
      this.pump();
    });
  }

  /** Re-evaluates the queue after a settings change. */
  kick(): void {
    if (this.dead) return;
    this.clearTimer();
    if (this.faults.blackholed) this.dropQueue();
    this.pump();
  }

  /** Refills the token bucket for the current rate. */
  resetBucket(): void {
    this.tokens = this.capacity();
    this.lastRefill = performance.now();
  }

  /** Stops all work and releases the queue and timer. */
  dispose(): void {
    this.dead = true;
    this.clearTimer();
    this.dropQueue();
  }

  private capacity(): number {
    return Math.max(1, this.faults.rate * BURST_SECONDS);
  }

  private onData(chunk: Buffer): void {
    if (this.dead || this.faults.blackholed) return;
    this.stats[this.reads]++;
    const f = this.faults;
    if (this.queue.length === 0 && !this.blocked && !f.stalled && f.delayMs === 0 && f.rate === 0) {
      this.write(chunk);
      return;
    }
    this.queue.push({ data: chunk, at: performance.now() });
    this.queued += chunk.length;
    this.pump();
  }

  private write(chunk: Buffer): void {
    this.stats[this.counter] += chunk.length;
    if (this.dst.write(chunk)) return;
    this.blocked = true;
    this.dst.once('drain', () => {
      this.blocked = false;
      this.pump();
    });
    this.updateFlow();
  }

  private pump(): void {
    if (this.dead) return;
    if (this.dst.destroyed) this.dispose();
    else this.finishPump(this.drain());
  }

  /** Writes every queued chunk that is due and within budget; returns ms until the next one may go. */
  private drain(): number | undefined {
    const f = this.faults;
    while (!this.blocked && !f.blackholed && !f.stalled && this.queue.length > 0) {
      const item = this.queue[0]!;
      const now = performance.now();
      const due = item.at + f.delayMs;
      if (due > now) return due - now;
      let n = item.data.length;
      if (f.rate > 0) {
        this.refill(now);
        const want = Math.min(n, this.capacity());
        if (this.tokens < want) return ((want - this.tokens) / f.rate) * 1000;
        n = Math.min(n, Math.floor(this.tokens));
        this.tokens -= n;
      }
      let piece = item.data;
      if (n < item.data.length) {
        piece = item.data.subarray(0, n);
        item.data = item.data.subarray(n);
      } else {
        this.queue.shift();
      }
      this.queued -= n;
      this.write(piece);
    }
    return undefined;
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.pump();
  };

  /** Schedules the next pump (if `waitMs` given), sends a pending FIN and updates the source's flow. */
  private finishPump(waitMs: number | undefined): void {
    if (waitMs !== undefined && !this.timer) {
      this.timer = setTimeout(this.onTimer, Math.max(MIN_TIMER_MS, Math.ceil(waitMs)));
    }
    this.maybeEnd();
    this.updateFlow();
  }

  private maybeEnd(): void {
    if (!this.srcEnded || this.endSent || this.faults.blackholed || this.queue.length > 0) return;
    this.endSent = true;
    this.dst.end(() => {
      // The source is fully gone, so nothing can flow back to it either: finish the peer off.
      if (this.src.destroyed) this.dst.destroy();
    });
  }

  private updateFlow(): void {
    if (this.dead) return;
    const f = this.faults;
    const limit = f.stalled
      ? STALL_QUEUE_BYTES
      : f.rate > 0
        ? Math.min(MAX_QUEUED_BYTES, Math.max(MIN_THROTTLE_QUEUE_BYTES, f.rate * THROTTLE_QUEUE_SECONDS))
        : MAX_QUEUED_BYTES;
    const pause = !f.blackholed && (this.blocked || this.queued > limit);
    if (pause && !this.pausedByUs) {
      this.pausedByUs = true;
      this.src.pause();
    } else if (!pause && this.pausedByUs) {
      this.pausedByUs = false;
      this.src.resume();
    }
  }

  private refill(now: number): void {
    const cap = this.capacity();
    this.tokens = Math.min(cap, this.tokens + ((now - this.lastRefill) / 1000) * this.faults.rate);
    this.lastRefill = now;
  }

  private dropQueue(): void {
    this.queue = [];
    this.queued = 0;
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** A client connection and its upstream connection to the target. */
class Link {
  readonly up: Pipe;
  readonly down: Pipe;
  readonly closed: Promise<void>;

  constructor(
    readonly client: Socket,
    readonly upstream: Socket,
    faults: Faults,
    stats: FaultProxyStats,
  ) {
    this.up = new Pipe(client, upstream, faults, stats, 'bytesUp', 'readsUp');
    this.down = new Pipe(upstream, client, faults, stats, 'bytesDown', 'readsDown');
    const closedOne = (sock: Socket, peer: Socket, into: Pipe) =>
      new Promise<void>((resolve) => {
        sock.on('error', noop);
        sock.on('close', (hadError) => {
          into.dispose();
          if (hadError) reset(peer);
          else if (peer.writableFinished) peer.destroy();
          resolve();
        });
      });
    this.closed = Promise.all([
      closedOne(client, upstream, this.down),
      closedOne(upstream, client, this.up),
    ]).then(noop);
  }

  /** Applies `fn` to both directions. */
  each(fn: (p: Pipe) => void): void {
    fn(this.up);
    fn(this.down);
  }
}

/**
 * A TCP proxy on 127.0.0.1 that forwards to one target and can inject network faults:
 * resets, blackholes, latency, bandwidth limits and refused connections.
 *
 * Pass-through is pipe-like with backpressure in both directions; every fault mode keeps
 * memory bounded by pausing the source socket.
 */
export class FaultProxy {
  private readonly links = new Set<Link>();
  private readonly faults: Faults = { blackholed: false, stalled: false, delayMs: 0, rate: 0 };
  private readonly counters = {
    connections: 0,
    active: 0,
    bytesUp: 0,
    bytesDown: 0,
    cuts: 0,
    readsUp: 0,
    readsDown: 0,
  };
  private refusing = false;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
    /** The port the proxy listens on, on 127.0.0.1. */
    readonly port: number,
    private readonly nagle: boolean,
  ) {
    server.on('connection', (sock) => this.accept(sock));
    server.on('error', noop);
  }

  /**
   * Starts a proxy on 127.0.0.1 forwarding to `target`.
   * @param opts.listenPort - port to listen on; an ephemeral port by default.
   * @param opts.nagle - leave Nagle's algorithm on for the proxy's own sockets, as many TCP hops
   *   do (bastions, ProxyJump forwarders, corporate proxies); by default TCP_NODELAY is set.
   */
  static async start(
    target: { host: '127.0.0.1' | string; port: number },
    opts: { listenPort?: number; nagle?: boolean } = {},
  ): Promise<FaultProxy> {
    const server = createServer({ allowHalfOpen: true });
    server.listen({ host: LISTEN_HOST, port: opts.listenPort ?? 0 });
    await once(server, 'listening');
    const addr = server.address();
    if (addr === null || typeof addr === 'string') throw new Error('fault-proxy: unexpected server address');
    return new FaultProxy(server, { host: target.host, port: target.port }, addr.port, opts.nagle === true);
  }

  /** RSTs both sides of every current connection; new connections are still accepted unless {@link refuse}d. */
  cut(): void {
    for (const link of this.links) {
      if (link.client.destroyed && link.upstream.destroyed) continue;
      this.counters.cuts++;
      link.each((p) => p.dispose());
      reset(link.client);
      reset(link.upstream);
    }
  }

  /**
   * Keeps sockets open but silently discards all bytes in both directions (including any
   * still queued by {@link delay}/{@link throttle}) until {@link restore}. New connections are
   * accepted but blackholed too. A FIN received meanwhile is held and forwarded after restore.
   */
  blackhole(): void {
    this.faults.blackholed = true;
    this.kickAll();
  }

  /**
   * Stops forwarding in both directions without losing anything, like a path whose far end froze
   * (a sleeping laptop, a zero TCP window): each direction reads a little, then pauses its source
   * so the sender's buffers fill and it sees backpressure. {@link restore} delivers what was held.
   */
  stall(): void {
    this.faults.stalled = true;
    this.kickAll();
  }

  /** Adds `ms` of one-way latency to every chunk in both directions, preserving order. 0 disables. */
  delay(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`fault-proxy: bad delay ${ms}`);
    this.faults.delayMs = ms;
    this.kickAll();
  }

  /**
   * Limits each direction of each connection to `bytesPerSec` with a token bucket (burst of
   * {@link BURST_SECONDS} worth), pausing the source socket so memory stays bounded. 0 disables.
   */
  throttle(bytesPerSec: number): void {
    if (!Number.isFinite(bytesPerSec) || bytesPerSec < 0) {
      throw new RangeError(`fault-proxy: bad rate ${bytesPerSec}`);
    }
    this.faults.rate = bytesPerSec;
    for (const link of this.links) link.each((p) => p.resetBucket());
    this.kickAll();
  }

  /** While `on`, new connections are accepted and immediately reset (RST). */
  refuse(on: boolean): void {
    this.refusing = on;
  }

  /** Returns to clean pass-through. Queued delayed bytes are delivered; dropped bytes stay dropped. */
  restore(): void {
    this.faults.blackholed = false;
    this.faults.stalled = false;
    this.faults.delayMs = 0;
    this.faults.rate = 0;
    this.refusing = false;
    this.kickAll();
  }

  /** A snapshot of the proxy's counters. */
  stats(): FaultProxyStats {
    return { ...this.counters, active: this.links.size };
  }

  /** Stops listening and destroys all sockets; resolves once every socket and the server have closed. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      const linksClosed = [...this.links].map((link) => {
        link.each((p) => p.dispose());
        link.client.destroy();
        link.upstream.destroy();
        return link.closed;
      });
      await Promise.all([serverClosed, ...linksClosed]);
    })();
    return this.closing;
  }

  private accept(client: Socket): void {
    if (this.refusing || this.closing) {
      client.on('error', noop);
      reset(client);
      return;
    }
    this.counters.connections++;
    client.setNoDelay(!this.nagle);
    const upstream = createConnection({ ...this.target, allowHalfOpen: true });
    upstream.setNoDelay(!this.nagle);
    const link = new Link(client, upstream, this.faults, this.counters);
    this.links.add(link);
    void link.closed.then(() => this.links.delete(link));
  }

  private kickAll(): void {
    for (const link of this.links) link.each((p) => p.kick());
  }
}
