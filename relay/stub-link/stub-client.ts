import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type * as z from 'zod/mini';
import type { PtyInputOrigin } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import {
  encodeAckFrame,
  encodeInputFrame,
  encodeInputFromFrame,
  encodeJsonFrame,
  type Frame,
  FrameType,
} from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { parseHello } from '../../provider/wire/hello-schema.js';
import {
  type BackgroundEventMessage,
  type ExitEventMessage,
  type FactEventMessage,
  type HelloMessage,
  type InputAckMessage,
  isObject,
  type ResponseMessage,
  STUB_PROTOCOL_VERSION,
  type StubAttachResult,
  type StubMethod,
  type StubMethods,
} from '../../provider/wire/messages.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { daemonMessageSchemas } from '../../provider/wire/stub-schemas.js';

/** A request not answered in this time fails with TIMEOUT (spawns and snapshots are well under it). */
const REQUEST_TIMEOUT_MS = 30_000;
const HANDSHAKE_TIMEOUT_MS = 15_000;

export interface StubDataEvent {
  id: string;
  incarnationId: string;
  seq: number;
  data: Uint8Array;
}

export interface StubClientOptions {
  role: string;
  buildId: string;
  /** The relay's identity toward the daemon: its credit claims survive a reconnect under this id. */
  linkId?: string;
  /** Names the input sequence space (one per InputChannel); the daemon de-duplicates per (linkId, epoch). */
  inputEpoch?: string;
  /** This relay uses the daemon only for its existing sessions (an older build's daemon). */
  legacy?: boolean;
}

interface Pending {
  method: StubMethod;
  resolve: (v: { result: unknown; blob?: Uint8Array }) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Relay side of one stub link over any byte stream (Unix socket, SSH channel, exec stdio):
 * handshake, request/response, input with acknowledgement, and the event streams.
 */
export class StubClient {
  readonly linkId: string;
  readonly data = new Emitter<StubDataEvent>();
  readonly fact = new Emitter<FactEventMessage>();
  readonly exit = new Emitter<ExitEventMessage>();
  readonly background = new Emitter<BackgroundEventMessage>();
  readonly closed = new Emitter<PtyRelayError>();
  /**
   * Set by the transport: why the link really went (e.g. the SSH connection's error), preferred
   * over the stream's own "closed" when the stream ends.
   */
  closeReason: (() => PtyRelayError | undefined) | undefined;
  /**
   * Spawn/attach results, emitted synchronously as the response is decoded: data frames that
   * follow in the same chunk are decoded before any promise continuation could record the
   * new incarnation, so whoever guards incarnations must learn it here.
   */
  readonly attached = new Emitter<{ result: StubAttachResult; blob?: Uint8Array }>();
  readonly inputAcks = new Emitter<InputAckMessage>();
  /** Called for every chunk received and every frame sent that expects an answer (link health). */
  onReceive: () => void = () => {};
  onExpectAnswer: () => void = () => {};
  /**
   * Runs as the frames of a turn are about to be written: what is owed to the daemon (credit)
   * joins them, so one keystroke is one write, one SSH packet.
   */
  beforeWrite: () => void = () => {};
  /** Writes handed to the stream: one per turn of the event loop that sent anything. */
  writes = 0;
  /** Chunks received (over SSH: one per channel data packet). */
  reads = 0;
  /** Input frames sent (keystrokes, pastes). */
  inputFrames = 0;
  private parts: Uint8Array[] = [];
  private turnArmed = false;
  /** The daemon's hello (protocol, build id, pid). */
  readonly ready: Promise<HelloMessage>;
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private readonly pings = new Map<number, { answered: () => void; lost: (e: PtyRelayError) => void }>();
  private nextPing = 1;
  private nextRid = 1;
  private isClosed = false;
  private resolveHello!: (h: HelloMessage) => void;
  private rejectHello!: (e: Error) => void;
  private hello: HelloMessage | undefined;

  constructor(
    private readonly stream: Duplex,
    opts: StubClientOptions,
  ) {
    this.linkId = opts.linkId ?? randomUUID();
    this.ready = new Promise((res, rej) => {
      this.resolveHello = res;
      this.rejectHello = rej;
    });
    this.ready.catch(() => {});
    const t = setTimeout(
      () =>
        this.fail(new PtyRelayError('TIMEOUT', `stub handshake took longer than ${HANDSHAKE_TIMEOUT_MS} ms`)),
      HANDSHAKE_TIMEOUT_MS,
    );
    this.ready.then(
      () => clearTimeout(t),
      () => clearTimeout(t),
    );
    (stream as { setNoDelay?: (v: boolean) => void }).setNoDelay?.(true);
    stream.on('data', (c: Buffer) => this.onChunk(c));
    const lost = (err: PtyRelayError) => this.fail(this.closeReason?.() ?? err);
    stream.on('error', (e) => lost(new PtyRelayError('LINK_CLOSED', `stub link error: ${e.message}`)));
    stream.on('close', () => lost(new PtyRelayError('LINK_CLOSED', 'stub link closed')));
    stream.on('end', () => lost(new PtyRelayError('LINK_CLOSED', 'stub link ended')));
    // A stream handed over paused (an exec bridge past its start marker) flows from here on.
    stream.resume();
    this.put(
      encodeJsonFrame({
        t: 'hello',
        protocol: STUB_PROTOCOL_VERSION,
        buildId: opts.buildId,
        role: opts.role,
        pid: process.pid,
        linkId: this.linkId,
        inputEpoch: opts.inputEpoch,
        binaryAcks: true,
        ...(opts.legacy ? { legacy: true } : {}),
      }),
    );
  }

  /**
   * The daemon said it ends on request (`stopping`, just before it closes this link): its sessions
   * end with it, and the link should not start a new daemon until it is used again.
   */
  daemonStopping = false;

  get isOpen(): boolean {
    return !this.isClosed;
  }

  get daemonHello(): HelloMessage | undefined {
    return this.hello;
  }

  request<M extends StubMethod>(
    method: M,
    params: StubMethods[M]['params'],
    timeoutMs: number = REQUEST_TIMEOUT_MS,
  ): Promise<{ result: StubMethods[M]['result']; blob?: Uint8Array }> {
    if (this.isClosed) return Promise.reject(new PtyRelayError('LINK_CLOSED', 'stub link is closed'));
    const rid = this.nextRid++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(rid);
        reject(new PtyRelayError('TIMEOUT', `${method} got no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(rid, { method, resolve: resolve as Pending['resolve'], reject, timer });
      this.onExpectAnswer();
      this.put(encodeJsonFrame({ t: 'req', rid, method, params }));
    });
  }

  async call<M extends StubMethod>(
    method: M,
    params: StubMethods[M]['params'],
    timeoutMs?: number,
  ): Promise<StubMethods[M]['result']> {
    return (await this.request(method, params, timeoutMs)).result;
  }

  /** The daemon de-duplicates input by origin (InputFrom frames). */
  get takesInputOrigin(): boolean {
    return this.hello?.inputOrigin === true;
  }

  /**
   * Sends one input frame, with its origin to a daemon that takes it (an InputFrom frame); the
   * daemon answers with `inputAck` (see InputChannel).
   */
  sendInputFrame(inputSeq: number, id: string, data: Uint8Array, origin?: PtyInputOrigin): void {
    if (this.isClosed) return;
    this.inputFrames++;
    this.onExpectAnswer();
    this.put(
      origin && this.hello?.inputOrigin === true
        ? encodeInputFromFrame(id, inputSeq, { origin: origin.instance, originSeq: origin.seq }, data)
        : encodeInputFrame(id, inputSeq, data),
    );
  }

  /** Credit acknowledgement for one session (see CreditWindow in the stub). */
  ack(id: string, seq: number): void {
    if (this.isClosed) return;
    // Binary to a daemon that takes it: no JSON or schema on either end for every keystroke's credit.
    this.put(
      this.hello?.binaryAcks === true ? encodeAckFrame(id, seq) : encodeJsonFrame({ t: 'ack', id, seq }),
    );
  }

  /** Tell the daemon this link leaves on purpose, then close. */
  goodbye(): void {
    if (!this.isClosed) {
      this.put(encodeJsonFrame({ t: 'goodbye' }));
      this.writeTurn();
    }
    this.close();
  }

  /** Heartbeat probe; resolves with the round-trip time, rejects when the link closes first. */
  ping(): Promise<number> {
    if (this.isClosed) return Promise.reject(new PtyRelayError('LINK_CLOSED', 'stub link is closed'));
    const n = this.nextPing++;
    const t0 = performance.now();
    this.onExpectAnswer();
    return new Promise((resolve, reject) => {
      this.pings.set(n, { answered: () => resolve(performance.now() - t0), lost: reject });
      this.put(encodeJsonFrame({ t: 'ping', n }));
    });
  }

  /** Closes the link; `err` says why (what `closed` emits), default "closed by the relay". */
  close(err?: PtyRelayError): void {
    this.fail(err ?? new PtyRelayError('LINK_CLOSED', 'stub link closed by the relay'));
  }

  /**
   * Frames produced together leave as one write (one SSH packet): the write waits for the code
   * that produced them to return (process.nextTick), not for the end of the event loop's turn,
   * which would put whatever else the turn still runs (timers, other sockets' reads) between a
   * keystroke and its packet.
   */
  private put(frame: Uint8Array): void {
    this.parts.push(frame);
    if (this.turnArmed) return;
    this.turnArmed = true;
    process.nextTick(this.writeTurn);
  }

  private readonly writeTurn = (): void => {
    if (this.isClosed) return;
    this.beforeWrite();
    this.turnArmed = false;
    const parts = this.parts;
    if (parts.length === 0) return;
    this.parts = [];
    this.writes++;
    this.stream.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  };

  private fail(err: PtyRelayError): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.parts = [];
    this.rejectHello(err);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    for (const p of this.pings.values()) p.lost(err);
    this.pings.clear();
    this.stream.destroy();
    this.closed.emit(err);
  }

  private onChunk(chunk: Buffer): void {
    this.reads++;
    this.onReceive();
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      this.fail(err as PtyRelayError);
      return;
    }
    for (const f of frames) this.onFrame(f);
  }

  private onFrame(f: Frame): void {
    if (f.type === FrameType.Data) {
      this.data.emit({ id: f.id, incarnationId: f.incarnationId, seq: f.seq, data: f.data });
      return;
    }
    if (f.type === FrameType.InputAck) {
      this.inputAcks.emit({ t: 'inputAck', upTo: f.upTo });
      return;
    }
    if (f.type !== FrameType.Json && f.type !== FrameType.JsonBlob) return;
    const m = f.message;
    if (!isObject(m)) return;
    try {
      this.onMessage(m, f.type === FrameType.JsonBlob ? f.blob : undefined);
    } catch (err) {
      this.fail(
        err instanceof PtyRelayError ? err : new PtyRelayError('PROTOCOL_ERROR', (err as Error).message),
      );
    }
  }

  /** A daemon message, checked by its schema (a malformed one fails the link with PROTOCOL_ERROR). */
  private onMessage(m: Record<string, unknown>, blob: Uint8Array | undefined): void {
    const s = daemonMessageSchemas;
    const parse = <S extends z.ZodMiniType>(schema: S): z.output<S> =>
      parseMessage(schema, m, `daemon ${String(m.t)}`, 'PROTOCOL_ERROR');
    switch (m.t) {
      case 'hello': {
        const parsed = parseHello(m);
        if ('error' in parsed)
          this.fail(new PtyRelayError('PROTOCOL_ERROR', `bad daemon hello: ${parsed.error}`));
        else this.onHello(parsed.hello);
        break;
      }
      case 'res':
        this.onResponse(parse(s.res), blob);
        break;
      case 'inputAck':
        this.inputAcks.emit(parse(s.inputAck));
        break;
      case 'pong': {
        const n = typeof m.n === 'number' ? m.n : 0;
        this.pings.get(n)?.answered();
        this.pings.delete(n);
        break;
      }
      case 'fact':
        this.fact.emit(parse(s.fact));
        break;
      case 'exit':
        this.exit.emit(parse(s.exit));
        break;
      case 'bg':
        this.background.emit(parse(s.bg));
        break;
      case 'error':
        this.fail(PtyRelayError.from(parse(s.error).error));
        break;
      case 'stopping':
        parse(s.stopping);
        this.daemonStopping = true;
        break;
    }
  }

  private onHello(h: HelloMessage): void {
    if (h.protocol !== STUB_PROTOCOL_VERSION) {
      this.fail(
        new PtyRelayError(
          'VERSION_MISMATCH',
          `daemon speaks protocol ${h.protocol}, relay ${STUB_PROTOCOL_VERSION}`,
        ),
      );
      return;
    }
    this.hello = h;
    this.resolveHello(h);
  }

  private onResponse(m: ResponseMessage, blob: Uint8Array | undefined): void {
    const p = this.pending.get(m.rid);
    if (!p) return;
    this.pending.delete(m.rid);
    clearTimeout(p.timer);
    if (m.error) p.reject(PtyRelayError.from(m.error));
    else {
      if (p.method === 'spawn' || p.method === 'attach')
        this.attached.emit({ result: m.result as StubAttachResult, blob });
      p.resolve({ result: m.result, blob });
    }
  }
}
