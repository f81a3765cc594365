import { PtyRelayError, type PtyRelayErrorShape } from '../provider/errors.js';
import { RELAY_RECONNECT_STEPS_MS, ReconnectLadder } from '../provider/reconnect-ladder.js';
import { RpcMessageSchema } from './schemas.js';

/** Sec-WebSocket-Protocol entries: ours, then the token (relay/service/auth.ts reads it there). */
const SUBPROTOCOL = 'ptyrelay.web.v1';
const TOKEN_PREFIX = 'ptyrelay.token.';
/** A request without a reply after this long fails with TIMEOUT. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The page's own link to the relay. */
export type RelayLinkState =
  | { state: 'connecting' }
  | { state: 'connected' }
  | { state: 'reconnecting'; attempt: number; nextInMs: number; reason: string }
  | { state: 'lost'; reason: string; code: PtyRelayErrorShape['code'] };

export interface RpcSocketHandlers {
  /** Runs on every new socket before it counts as connected (hello, re-attach). */
  handshake(): Promise<void>;
  notification(method: string, params: unknown): void;
  binary(message: ArrayBuffer): void;
  link(state: RelayLinkState): void;
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

function rpcError(e: { message: string; data?: { code?: string } & Record<string, unknown> }): PtyRelayError {
  const code = (e.data?.code ?? 'PROTOCOL_ERROR') as PtyRelayErrorShape['code'];
  return PtyRelayError.from({ code, message: e.message, details: e.data });
}

/**
 * One WebSocket to the relay speaking JSON-RPC 2.0 (text) and binary frames, reconnecting with a
 * ladder after every drop. The token travels as a subprotocol entry, never in a URL. A socket
 * that never opens is checked against `/healthz` with the token as a Bearer header: a 401 means
 * the token is wrong (revoked, expired) and the link is lost instead of retried.
 */
export class RpcSocket {
  private ws: WebSocket | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** The codebase's one backoff, with RelayClient's steps. */
  private readonly ladder = new ReconnectLadder({ steps: RELAY_RECONNECT_STEPS_MS });
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private connected = false;

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly on: RpcSocketHandlers,
  ) {}

  get isConnected(): boolean {
    return this.connected;
  }

  start(): void {
    this.on.link({ state: 'connecting' });
    this.open();
  }

  private open(): void {
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url, [SUBPROTOCOL, TOKEN_PREFIX + this.token]);
    } catch (err) {
      // The browser refuses tokens with characters a subprotocol cannot carry.
      this.lose('AUTH_FAILED', `the token cannot be sent by a browser: ${(err as Error).message}`);
      return;
    }
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      void this.onOpen(ws);
    };
    ws.onmessage = (ev) => this.onMessage(ev);
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.connected = false;
      this.failPending(new PtyRelayError('LINK_CLOSED', 'the connection to the relay closed'));
      if (this.closed) return;
      const reason = ev.reason || `closed (${ev.code})`;
      if (opened) this.retry(reason);
      else void this.checkAuth().then((ok) => (ok ? this.retry(reason) : undefined));
    };
  }

  private async onOpen(ws: WebSocket): Promise<void> {
    try {
      await this.on.handshake();
    } catch (err) {
      if (this.ws === ws) ws.close(4000, `handshake failed: ${(err as Error).message}`.slice(0, 120));
      return;
    }
    if (this.ws !== ws) return;
    this.ladder.reset();
    this.connected = true;
    this.on.link({ state: 'connected' });
  }

  /** False (and the link lost) when the relay rejects the token. */
  private async checkAuth(): Promise<boolean> {
    try {
      const res = await fetch('/healthz', { headers: { authorization: `Bearer ${this.token}` } });
      if (res.status !== 401) return true;
    } catch (err) {
      // The relay is unreachable: that is a reason to retry, not an auth failure.
      return err instanceof Error;
    }
    this.lose('AUTH_FAILED', 'the relay rejected the token');
    return false;
  }

  private retry(reason: string): void {
    // No give-up count: the page retries until the relay answers or rejects the token.
    const { attempt, delayMs: nextInMs } = this.ladder.next()!;
    this.on.link({ state: 'reconnecting', attempt, nextInMs, reason });
    this.retryTimer = setTimeout(() => this.open(), nextInMs);
  }

  private lose(code: PtyRelayErrorShape['code'], reason: string): void {
    this.closed = true;
    this.on.link({ state: 'lost', reason, code });
  }

  private onMessage(ev: MessageEvent): void {
    if (ev.data instanceof ArrayBuffer) {
      this.on.binary(ev.data);
      return;
    }
    let msg: ReturnType<typeof RpcMessageSchema.parse>;
    try {
      msg = RpcMessageSchema.parse(JSON.parse(String(ev.data)));
    } catch (err) {
      console.warn('ptyrelay: malformed message from the relay dropped', err);
      return;
    }
    if ('method' in msg) {
      try {
        this.on.notification(msg.method, msg.params);
      } catch (err) {
        console.warn(`ptyrelay: ${msg.method} from the relay not understood`, err);
      }
      return;
    }
    const p = msg.id === null ? undefined : this.pending.get(msg.id);
    if (!p || msg.id === null) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if ('error' in msg) p.reject(rpcError(msg.error));
    else p.resolve(msg.result);
  }

  /** A JSON-RPC request; fails with LINK_CLOSED when the link is down or drops meanwhile. */
  request(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new PtyRelayError('LINK_CLOSED', 'not connected to the relay'));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new PtyRelayError('TIMEOUT', `${method}: no reply from the relay`));
      }, REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  notify(method: string, params: Record<string, unknown>): void {
    if (this.ws?.readyState === WebSocket.OPEN)
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  /** False when the link is down (the caller keeps the bytes and resends after the reconnect). */
  sendBinary(bytes: Uint8Array): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(bytes);
    return true;
  }

  private failPending(err: Error): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.ws?.close(1000, 'page closed');
    this.ws = undefined;
    this.failPending(new PtyRelayError('DISPOSED', 'closed'));
  }
}
