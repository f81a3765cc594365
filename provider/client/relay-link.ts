import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import type { LinkState } from '../contract.js';
import { Emitter } from '../emitter.js';
import { type ErrorCode, ErrorCodes, PtyRelayError } from '../errors.js';
import { corkPerTurn } from '../flow/socket-write-coalescer.js';
import { RELAY_RECONNECT_STEPS_MS, ReconnectLadder } from '../reconnect-ladder.js';

/** A ping goes out this often; a link silent for two intervals is considered dead. */
const HEARTBEAT_MS = 10_000;
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** Reconnect policy of a RelayClient. */
export interface RelayReconnectOptions {
  steps?: readonly number[];
  jitter?: number;
  /** Attempts at the very first connection before the link is `lost` (default: unlimited). */
  connectAttempts?: number;
  /** Failed reconnect attempts in a row before the link is `lost` (default: unlimited). */
  giveUpAfter?: number;
  random?: () => number;
}

/** Where and how a {@link RelayLink} connects. */
export interface RelayLinkOptions {
  url: string;
  token: string;
  /** WebSocket implementation (default: the `ws` package). */
  WebSocket?: typeof WebSocket;
  reconnect?: RelayReconnectOptions;
  heartbeatMs?: number;
  /** CA certificate(s) (PEM) a `wss://` relay's certificate must chain to, e.g. its self-signed one. */
  ca?: string | Buffer;
}

/** What the owner of a link does on each event. */
export interface RelayLinkHandlers {
  /** Runs on every new socket before the link counts as connected (hello, re-attach, input resend). */
  handshake(): Promise<void>;
  notification(method: string, params: Record<string, unknown>): void;
  binary(data: Buffer): void;
  /** The socket went away (requests that were not retried have been rejected). */
  dropped(): void;
}

interface Pending {
  method: string;
  params: unknown;
  retry: boolean;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/** Maps a JSON-RPC error to a PtyRelayError: the relay puts the ptyrelay code in `data.code`, details beside it. */
export function rpcError(e: { code?: number; message?: string; data?: unknown }): PtyRelayError {
  const { code, retryable: _r, ...details } = (e.data ?? {}) as Record<string, unknown>;
  if (typeof code === 'string' && code in ErrorCodes) {
    return new PtyRelayError(
      code as ErrorCode,
      e.message ?? code,
      Object.keys(details).length ? details : undefined,
    );
  }
  return new PtyRelayError('PROTOCOL_ERROR', e.message ?? 'relay error', { rpcCode: e.code });
}

/**
 * One logical connection to the relay over successive WebSockets: JSON-RPC requests and
 * notifications, binary messages, a reconnect ladder, and a ping heartbeat. Requests made while
 * the link is down wait for it; in-flight ones are resent (`retry`) or fail with LINK_CLOSED.
 */
export class RelayLink {
  readonly states = new Emitter<LinkState>();
  private current: LinkState = { state: 'idle' };
  private ws: WebSocket | undefined;
  /** Corks the socket for the rest of the turn (one write per turn, see corkPerTurn). */
  private beforeSend: () => void = () => {};
  private nextId = 1;
  private readonly inflight = new Map<number, Pending>();
  private waiting: Pending[] = [];
  private readonly ladder: ReconnectLadder;
  /** Socket opens in a row that never completed a handshake. */
  private failures = 0;
  private everConnected = false;
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private lastRx = 0;
  private disposed = false;
  private lostError: PtyRelayError | undefined;
  /** Set when a handshake was refused for good; the next close gives up. */
  private fatal: PtyRelayError | undefined;

  constructor(
    private readonly opts: RelayLinkOptions,
    private readonly handlers: RelayLinkHandlers,
  ) {
    const r = opts.reconnect ?? {};
    this.ladder = new ReconnectLadder({
      steps: r.steps ?? RELAY_RECONNECT_STEPS_MS,
      ...(r.jitter !== undefined ? { jitter: r.jitter } : {}),
      ...(r.random ? { random: r.random } : {}),
    });
  }

  get state(): LinkState {
    return this.current;
  }

  /** True once a first handshake succeeded. */
  get hasConnected(): boolean {
    return this.everConnected;
  }

  get connected(): boolean {
    return this.current.state === 'connected';
  }

  /** Opens the first connection (idempotent). */
  start(): void {
    if (this.current.state !== 'idle' || this.disposed) return;
    this.setState({ state: 'connecting' });
    this.open();
  }

  /** Resolves once connected; rejects when the link is lost or disposed. */
  whenConnected(): Promise<void> {
    this.start();
    if (this.connected) return Promise.resolve();
    if (this.lostError) return Promise.reject(this.lostError);
    return new Promise((resolve, reject) => {
      const off = this.states.on((s) => {
        if (s.state === 'connected') resolve();
        else if (s.state === 'lost') reject(this.lostError);
        else return;
        off();
      });
    });
  }

  /** A request; waits for the link. `retry` resends it after a reconnect instead of failing. */
  call<T>(method: string, params: unknown, retry = false): Promise<T> {
    if (this.disposed) return Promise.reject(new PtyRelayError('DISPOSED', 'RelayClient was disposed'));
    if (this.lostError) return Promise.reject(this.lostError);
    this.start();
    return new Promise<T>((resolve, reject) => {
      const p: Pending = { method, params, retry, resolve: resolve as (v: unknown) => void, reject };
      if (this.connected) this.send(p);
      else this.waiting.push(p);
    });
  }

  /** A request on the current socket, before the link counts as connected (handshake only). */
  callNow<T>(method: string, params: unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.ws?.readyState !== WebSocket.OPEN) {
        reject(new PtyRelayError('LINK_CLOSED', 'relay connection closed'));
        return;
      }
      this.send({ method, params, retry: false, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  /** A notification; dropped when no socket is open. */
  notify(method: string, params: unknown): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    this.beforeSend();
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  /** One binary message on the open socket; false when there is none. */
  sendBinary(data: Uint8Array): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.beforeSend();
    this.ws.send(data, () => {});
    return true;
  }

  /** Closes the socket as a network failure would (tests); the link reconnects. */
  drop(): void {
    this.ws?.terminate();
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
    clearInterval(this.heartbeat);
    const ws = this.ws;
    this.ws = undefined;
    ws?.close(1000, 'client disposed');
    const err = new PtyRelayError('DISPOSED', 'RelayClient was disposed');
    for (const p of [...this.inflight.values(), ...this.waiting]) p.reject(err);
    this.inflight.clear();
    this.waiting = [];
    this.states.clear();
  }

  private setState(s: LinkState): void {
    this.current = s;
    this.states.emit(s);
  }

  private send(p: Pending): void {
    const id = this.nextId++;
    this.inflight.set(id, p);
    this.beforeSend();
    this.ws!.send(JSON.stringify({ jsonrpc: '2.0', id, method: p.method, params: p.params }), () => {});
  }

  private open(): void {
    const Ctor = this.opts.WebSocket ?? WebSocket;
    const ws = new Ctor(this.opts.url, {
      headers: { Authorization: `Bearer ${this.opts.token}` },
      perMessageDeflate: false,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      ...(this.opts.ca !== undefined ? { ca: this.opts.ca } : {}),
    });
    ws.binaryType = 'nodebuffer';
    this.ws = ws;
    this.beforeSend = () => {};
    ws.on('upgrade', (res: IncomingMessage) => {
      if (this.ws === ws) this.beforeSend = corkPerTurn(res.socket);
    });
    let lastError: Error | undefined;
    ws.on('open', () => void this.onOpen(ws));
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      this.lastRx = Date.now();
      if (isBinary) this.handlers.binary(data);
      else this.onText(data.toString('utf8'));
    });
    ws.on('pong', () => {
      this.lastRx = Date.now();
    });
    ws.on('error', (err: Error) => {
      lastError = err;
    });
    ws.on('close', () => this.onClose(ws, lastError));
  }

  private async onOpen(ws: WebSocket): Promise<void> {
    this.lastRx = Date.now();
    const every = this.opts.heartbeatMs ?? HEARTBEAT_MS;
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastRx > 2 * every) ws.terminate();
      else if (ws.readyState === WebSocket.OPEN) ws.ping();
    }, every);
    this.heartbeat.unref();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.handlers.handshake(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('handshake timed out')), HANDSHAKE_TIMEOUT_MS * 3);
        }),
      ]);
    } catch (err) {
      // A refusal that a retry cannot fix (e.g. the server does not speak ptyrelay/*) ends the link.
      if (err instanceof PtyRelayError && !err.retryable && err.code !== 'NOT_FOUND') this.fatal = err;
      if (this.ws === ws) ws.terminate();
      return;
    } finally {
      clearTimeout(timer);
    }
    if (this.ws !== ws || ws.readyState !== WebSocket.OPEN) return;
    this.ladder.reset();
    this.failures = 0;
    this.everConnected = true;
    this.setState({ state: 'connected' });
    const queued = this.waiting;
    this.waiting = [];
    for (const p of queued) this.send(p);
  }

  private onText(text: string): void {
    let msg: {
      id?: number;
      method?: string;
      params?: Record<string, unknown>;
      result?: unknown;
      error?: never;
    };
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (msg.method !== undefined) {
      if (msg.id === undefined) this.handlers.notification(msg.method, msg.params ?? {});
      return;
    }
    const p = msg.id !== undefined ? this.inflight.get(msg.id) : undefined;
    if (!p) return;
    this.inflight.delete(msg.id!);
    if (msg.error) p.reject(rpcError(msg.error));
    else p.resolve(msg.result);
  }

  private onClose(ws: WebSocket, err: Error | undefined): void {
    if (this.ws !== ws) return;
    const handshaken = this.connected;
    this.ws = undefined;
    clearInterval(this.heartbeat);
    const closed = new PtyRelayError('LINK_CLOSED', 'relay connection closed');
    // Retried requests go back to the front of the queue, in their original order.
    const again: Pending[] = [];
    for (const p of this.inflight.values()) {
      if (p.retry) again.push(p);
      else p.reject(closed);
    }
    this.inflight.clear();
    this.waiting = [...again, ...this.waiting];
    this.handlers.dropped();
    if (this.disposed) return;
    if (this.fatal) {
      this.lose(this.fatal);
      return;
    }
    const reason = err?.message ?? 'connection closed';
    const status = /Unexpected server response: (\d+)/.exec(reason)?.[1];
    if (status === '401' || status === '403') {
      this.lose(new PtyRelayError('AUTH_FAILED', `relay refused the token (HTTP ${status})`));
      return;
    }
    if (status === '503') {
      this.lose(
        new PtyRelayError(
          'LIMIT_EXCEEDED',
          'the relay has as many connections as limits.maxConnections allows',
          {
            limit: 'maxConnections',
          },
        ),
      );
      return;
    }
    if (!handshaken) this.failures++;
    const r = this.opts.reconnect ?? {};
    const limit = this.everConnected ? r.giveUpAfter : r.connectAttempts;
    if (limit !== undefined && this.failures >= limit) {
      const what = this.everConnected ? 'lost the relay' : 'cannot reach the relay';
      this.lose(new PtyRelayError('CONNECT_FAILED', `${what} at ${this.opts.url}: ${reason}`));
      return;
    }
    // No give-up count on the ladder itself: `failures` above decides when the link is lost.
    const { attempt, delayMs: delay } = this.ladder.next()!;
    this.setState({ state: 'reconnecting', attempt, nextInMs: delay, lastError: reason, cause: 'relay' });
    this.timer = setTimeout(() => {
      if (!this.disposed) this.open();
    }, delay);
  }

  private lose(err: PtyRelayError): void {
    this.lostError = err;
    for (const p of this.waiting) p.reject(err);
    this.waiting = [];
    this.setState({ state: 'lost', reason: err.message });
  }
}
