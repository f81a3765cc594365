import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import { isPtyRelayError } from '../../provider/errors.js';
import { type Corkable, corkPerTurn } from '../../provider/flow/socket-write-coalescer.js';
import type { Grant } from '../core/grant.js';
import type { Logger } from '../core/log.js';
import { JsonRpcErrorCodes, RpcError } from '../core/rpc-error.js';
import type {
  RpcConnection,
  RpcExtension,
  RpcMethodHandler,
  RpcNotificationHandler,
} from '../core/rpc-types.js';
import type { InputAudit } from '../tokens/input-audit.js';

/** An RpcConnection the server can also close (used for protocol-level disconnects). */
export interface ClosableRpcConnection extends RpcConnection {
  close(code?: number, reason?: string): void;
}

type JsonRpcId = string | number | null;

interface JsonRpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

/** Maps a thrown error to a JSON-RPC error object (PtyRelayError → −32000 with `data.code`). */
export function toJsonRpcError(err: unknown): JsonRpcErrorBody {
  if (err instanceof RpcError) {
    return err.data === undefined
      ? { code: err.code, message: err.message }
      : { code: err.code, message: err.message, data: err.data };
  }
  if (isPtyRelayError(err)) {
    return {
      code: JsonRpcErrorCodes.ServerError,
      message: err.message,
      data: { ...(err.details ?? {}), code: err.code, retryable: err.retryable },
    };
  }
  return { code: JsonRpcErrorCodes.InternalError, message: (err as Error)?.message ?? String(err) };
}

/** Method and notification tables merged from every extension (first registration wins). */
export class RpcDispatchTable {
  readonly methods = new Map<string, RpcMethodHandler>();
  readonly notifications = new Map<string, RpcNotificationHandler>();

  constructor(readonly extensions: RpcExtension[]) {
    for (const ext of extensions) {
      for (const [name, h] of Object.entries(ext.methods ?? {})) {
        if (!this.methods.has(name)) this.methods.set(name, h);
      }
      for (const [name, h] of Object.entries(ext.notifications ?? {})) {
        if (!this.notifications.has(name)) this.notifications.set(name, h);
      }
    }
  }
}

export interface ConnectionHooks {
  log: Logger;
  /** What the token that opened the connection allows. */
  grant: Grant;
  /** Where input is audited. */
  audit?: InputAudit;
  /** Bytes handed to the socket. */
  onSent?(kind: 'text' | 'binary', bytes: number): void;
  /** The connection's socket: what one turn of the event loop sends leaves as one write. */
  socket?: Corkable;
}

/**
 * One WebSocket client speaking JSON-RPC 2.0 in text frames (binary frames go to the
 * extensions' `onBinary`). Requests run concurrently; each gets exactly one response.
 */
export class WsRpcConnection implements ClosableRpcConnection {
  readonly connectionId = randomUUID();
  clientId: string | undefined;
  readonly state = new Map<string, unknown>();
  private readonly closeCallbacks: Array<() => void> = [];
  private closed = false;
  private readonly beforeSend: () => void;
  readonly grant: Grant;

  constructor(
    private readonly ws: WebSocket,
    private readonly table: RpcDispatchTable,
    private readonly hooks: ConnectionHooks,
  ) {
    this.beforeSend = corkPerTurn(hooks.socket);
    this.grant = hooks.grant;
    ws.on('message', (data, isBinary) => this.onMessage(data as Buffer | Buffer[] | ArrayBuffer, isBinary));
    ws.on('close', () => this.onSocketClose());
    ws.on('error', (err) => hooks.log.debug({ err: err.message, conn: this.connectionId }, 'ws error'));
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  private sendText(obj: unknown): void {
    this.sendRawText(JSON.stringify(obj));
  }

  sendRawText(text: string | Buffer): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.beforeSend();
    this.ws.send(text, { binary: false });
    this.hooks.onSent?.('text', Buffer.byteLength(text));
  }

  notify(method: string, params: unknown): void {
    this.sendText({ jsonrpc: '2.0', method, params });
  }

  sendBinary(parts: Uint8Array[]): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    const buf = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    this.beforeSend();
    this.ws.send(buf, { binary: true });
    this.hooks.onSent?.('binary', buf.length);
  }

  noteInput(id: string, bytes: number): void {
    this.hooks.audit?.record(this.grant, id, bytes);
  }

  onClose(cb: () => void): void {
    if (this.closed) queueMicrotask(cb);
    else this.closeCallbacks.push(cb);
  }

  close(code = 1000, reason = ''): void {
    this.ws.close(code, reason);
  }

  /** Closes now: the close frame is sent, and the socket is cut if the peer has not answered within `graceMs`. */
  closeWithin(graceMs: number, code: number, reason: string): void {
    this.ws.close(code, reason);
    const cut = setTimeout(() => this.ws.terminate(), graceMs);
    cut.unref();
    this.ws.once('close', () => clearTimeout(cut));
  }

  private onSocketClose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const cb of this.closeCallbacks.splice(0)) {
      try {
        cb();
      } catch (err) {
        this.hooks.log.warn({ err: (err as Error).message }, 'onClose callback failed');
      }
    }
  }

  private reply(id: JsonRpcId, body: { result: unknown } | { error: JsonRpcErrorBody }): void {
    this.sendText({ jsonrpc: '2.0', id, ...body });
  }

  private onMessage(data: Buffer | Buffer[] | ArrayBuffer, isBinary: boolean): void {
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (isBinary) {
      for (const ext of this.table.extensions) {
        try {
          ext.onBinary?.(this, buf);
        } catch (err) {
          this.hooks.log.warn({ err: (err as Error).message, ext: ext.name }, 'onBinary failed');
        }
      }
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(buf.toString('utf8'));
    } catch {
      this.reply(null, {
        error: { code: JsonRpcErrorCodes.ParseError, message: 'parse error: invalid JSON' },
      });
      return;
    }
    this.handle(msg);
  }

  private handle(msg: unknown): void {
    const m = msg as Record<string, unknown> | null;
    if (!m || typeof m !== 'object' || Array.isArray(m) || m.jsonrpc !== '2.0') {
      const id = m && typeof m === 'object' && 'id' in m ? (m.id as JsonRpcId) : null;
      const message = Array.isArray(m) ? 'batches are not supported' : 'not a JSON-RPC 2.0 message';
      this.reply(id, { error: { code: JsonRpcErrorCodes.InvalidRequest, message } });
      return;
    }
    if (typeof m.method !== 'string') return; // A response from the client: nothing awaits it.
    const params = (m.params && typeof m.params === 'object' ? m.params : {}) as Record<string, unknown>;
    if (!('id' in m) || m.id === undefined) {
      const h = this.table.notifications.get(m.method);
      if (!h) return;
      try {
        h(this, params);
      } catch (err) {
        this.hooks.log.warn({ err: (err as Error).message, method: m.method }, 'notification handler failed');
      }
      return;
    }
    const id = m.id as JsonRpcId;
    if (id !== null && typeof id !== 'string' && typeof id !== 'number') {
      this.reply(null, { error: { code: JsonRpcErrorCodes.InvalidRequest, message: 'invalid id' } });
      return;
    }
    const h = this.table.methods.get(m.method);
    if (!h) {
      this.reply(id, {
        error: { code: JsonRpcErrorCodes.MethodNotFound, message: `method not found: ${m.method}` },
      });
      return;
    }
    void this.run(id, m.method, h, params);
  }

  private async run(id: JsonRpcId, method: string, h: RpcMethodHandler, params: Record<string, unknown>) {
    try {
      const result = await h(this, params);
      this.reply(id, { result: result ?? null });
    } catch (err) {
      const body = toJsonRpcError(err);
      if (body.code === JsonRpcErrorCodes.InternalError) {
        this.hooks.log.warn({ err: (err as Error)?.stack ?? String(err), method }, 'rpc method failed');
      }
      this.reply(id, { error: body });
      if (err instanceof RpcError && err.closeConnection) this.close(1002, body.message.slice(0, 100));
    }
  }
}
