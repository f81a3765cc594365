import WebSocket from 'ws';
import type {
  IPtyProvider,
  PtyAttachOptions,
  PtyAttachResult,
  PtyDataEvent,
  PtyExitEvent,
  PtyFactEvent,
  PtyProcessInfo,
  PtySpawnOptions,
  PtySpawnResult,
} from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { ActionEnvelope } from '../../relay/ahp/types.js';
import type { HostRouter } from '../../relay/core/rpc-types.js';
import { routerOver } from '../../relay/service/host-router.js';

/** A JSON-RPC error as received. */
export interface RpcErrorReply {
  code: number;
  message: string;
  data?: Record<string, unknown> & { code?: string; supportedVersions?: string[] };
}

/** Minimal JSON-RPC client over `ws` for tests. */
export class TestClient {
  readonly notifications: Array<{ method: string; params: unknown }> = [];
  readonly binary: Buffer[] = [];
  readonly replies = new Map<number | string | null, { result?: unknown; error?: RpcErrorReply }>();
  private nextId = 1;
  private waiters = new Set<() => void>();
  closed: { code: number; reason: string } | undefined;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      if (isBinary) this.binary.push(data as Buffer);
      else {
        const m = JSON.parse(String(data));
        if (m.method) this.notifications.push({ method: m.method, params: m.params });
        else this.replies.set(m.id, m);
      }
      for (const w of this.waiters) w();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
      for (const w of this.waiters) w();
    });
  }

  /** Resolves once `fn` returns a truthy value (checked on every message). */
  waitFor<T>(fn: () => T | undefined | false, what = 'condition', timeoutMs = 10_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const v = fn();
        if (v) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve(v);
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  sendRaw(text: string): void {
    this.ws.send(text);
  }

  /** Sends a request; resolves with `{result}` or `{error}`. */
  // biome-ignore lint/suspicious/noExplicitAny: replies are untyped JSON that the tests assert on.
  async call(method: string, params: unknown = {}): Promise<{ result?: any; error?: RpcErrorReply }> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return this.waitFor(() => this.replies.get(id), `reply to ${method}`);
  }

  /** Sends a request and returns its result, failing the test on an error reply. */
  // biome-ignore lint/suspicious/noExplicitAny: replies are untyped JSON that the tests assert on.
  async request(method: string, params: unknown = {}): Promise<any> {
    const r = await this.call(method, params);
    if (r.error) throw new Error(`${method} failed: ${JSON.stringify(r.error)}`);
    return r.result;
  }

  notify(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  /** Every `action` envelope received so far. */
  get envelopes(): ActionEnvelope[] {
    return this.notifications.filter((n) => n.method === 'action').map((n) => n.params as ActionEnvelope);
  }

  waitEnvelope(
    pred: (e: ActionEnvelope) => boolean,
    what = 'envelope',
    timeoutMs = 10_000,
  ): Promise<ActionEnvelope> {
    return this.waitFor(() => this.envelopes.find(pred), what, timeoutMs);
  }

  /** Concatenated `terminal/data` of one channel. */
  dataOf(channel: string): string {
    return this.envelopes
      .filter((e) => e.channel === channel && e.action.type === 'terminal/data')
      .map((e) => (e.action as { data: string }).data)
      .join('');
  }

  close(): void {
    this.ws.close();
  }
}

export interface ConnectOptions {
  token?: string;
  /** Send the token as a subprotocol entry instead of a header. */
  viaSubprotocol?: boolean;
  protocols?: string[];
  origin?: string;
}

/** Opens a connection; resolves with the client, or with the HTTP status of a refused upgrade. */
export function connect(url: string, o: ConnectOptions = {}): Promise<TestClient | { status: number }> {
  const headers: Record<string, string> = {};
  const protocols = [...(o.protocols ?? [])];
  if (o.token && o.viaSubprotocol) protocols.push(`ptyrelay.token.${o.token}`);
  else if (o.token) headers.authorization = `Bearer ${o.token}`;
  const ws = new WebSocket(url, protocols, { headers, origin: o.origin });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(new TestClient(ws)));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once('error', (err) => reject(err));
  });
}

/** Connects and fails unless the upgrade succeeded. */
export async function open(url: string, o: ConnectOptions = {}): Promise<TestClient> {
  const c = await connect(url, o);
  if (!(c instanceof TestClient)) throw new Error(`upgrade refused with ${c.status}`);
  return c;
}

/** An in-memory IPtyProvider for host `local`: records calls, emits what the test says. */
export class FakeProvider implements Partial<IPtyProvider> {
  readonly data = new Emitter<PtyDataEvent>();
  readonly facts = new Emitter<PtyFactEvent>();
  readonly exits = new Emitter<PtyExitEvent>();
  readonly writes: Array<{ id: string; data: string }> = [];
  readonly resizes: Array<{ id: string; cols: number; rows: number }> = [];
  readonly shutdowns: string[] = [];
  /** Bytes the relay acknowledged per terminal (its TerminalCredit). */
  readonly acked = new Map<string, number>();
  private n = 0;
  private seqs = new Map<string, number>();
  /** Everything emitted per id (what an attach replays). */
  private history = new Map<string, Buffer>();

  async spawn(o: PtySpawnOptions): Promise<PtySpawnResult> {
    const id = `local/pty-${++this.n}`;
    this.seqs.set(id, 0);
    this.history.set(id, Buffer.alloc(0));
    return {
      id,
      pid: 1000 + this.n,
      incarnationId: `inc-${this.n}`,
      cols: o.cols,
      rows: o.rows,
      providerSequence: { value: 0, generation: 'continued' },
    };
  }

  /** Replays what was emitted from `fromSeq`; NOT_FOUND for ids it never spawned. */
  async attach(id: string, o: PtyAttachOptions = {}): Promise<PtyAttachResult> {
    const seen = this.history.get(id);
    if (!seen) throw new PtyRelayError('NOT_FOUND', `no terminal ${id}`, { id });
    const n = id.split('-').pop();
    return {
      id,
      pid: 1000 + Number(n),
      incarnationId: `inc-${n}`,
      cols: 80,
      rows: 24,
      providerSequence: { value: seen.length, generation: 'continued' },
      replay: seen.subarray(o.fromSeq ?? 0),
    };
  }

  /** Nothing beyond what it spawned: no alias to find. */
  async listProcesses(): Promise<PtyProcessInfo[]> {
    return [];
  }

  async write(id: string, data: string | Uint8Array): Promise<void> {
    this.writes.push({ id, data: String(data) });
  }

  onBackgroundStreamEvent(): () => void {
    return () => {};
  }

  acknowledgeDataEvent(id: string, bytes: number): void {
    this.acked.set(id, (this.acked.get(id) ?? 0) + bytes);
  }

  async resize(id: string, cols: number, rows: number): Promise<void> {
    this.resizes.push({ id, cols, rows });
  }

  async shutdown(id: string): Promise<void> {
    this.shutdowns.push(id);
  }

  /** Emits output for `id` as the provider would. */
  emitData(id: string, text: string): void {
    const seq = this.seqs.get(id) ?? 0;
    const data = Buffer.from(text);
    this.seqs.set(id, seq + data.length);
    this.history.set(id, Buffer.concat([this.history.get(id) ?? Buffer.alloc(0), data]));
    this.data.emit({ id, incarnationId: `inc-${id.split('-').pop()}`, seq, data });
  }

  onData(l: (e: PtyDataEvent) => void) {
    return this.data.on(l);
  }
  onFact(l: (e: PtyFactEvent) => void) {
    return this.facts.on(l);
  }
  onExit(l: (e: PtyExitEvent) => void) {
    return this.exits.on(l);
  }
}

/** A router whose only host `local` is served by `p`. */
export function fakeRouter(p: FakeProvider): HostRouter {
  return routerOver({ local: p as unknown as IPtyProvider });
}
