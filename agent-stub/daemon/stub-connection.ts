import type { Socket } from 'node:net';
import type * as z from 'zod/mini';
import type { PtyExitInfo, PtyFact } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import {
  encodeInputAckFrame,
  encodeJsonBlobFrame,
  encodeJsonFrame,
  type Frame,
  FrameType,
  type InputOriginField,
} from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { parseHello } from '../../provider/wire/hello-schema.js';
import { type HelloMessage, isObject, STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { clientControlSchema, requestSchema } from '../../provider/wire/stub-schemas.js';
import type { PtySession, SessionSink } from '../session/pty-session.js';
import { BackgroundDelivery } from './background-delivery.js';
import { ConnectionOutput } from './connection-output.js';
import { HistoryCatchUp } from './history-catch-up.js';
import {
  type HandlerConnection,
  type HandlerOutput,
  REPLIED,
  type StubRequestHandler,
} from './request-handler.js';
import type { StubInputLedgers } from './stub-input-ledgers.js';

/** How long a link that broke the protocol stays half-closed for its peer to read the error. */
const PROTOCOL_ERROR_LINGER_MS = 2000;
/** How long a link told that the daemon stops may take to read it before it is closed anyway. */
const STOPPING_LINGER_MS = 1000;

let nextConnectionId = 1;

export interface ConnectionContext {
  buildId: string;
  handler: StubRequestHandler;
  /** Input applied, per link and per client instance, shared by every connection (exactly once). */
  inputs: StubInputLedgers;
  onClose(conn: StubConnection): void;
  /** A relay of a newer build connected to this daemon as a legacy daemon. */
  onSuperseded(): void;
  /** Keep-tail floor for background sessions (bytes). */
  keepTailMin: number;
  /** Daemon-wide cap on output buffered in connection sockets. */
  pendingCap: number;
  totalBuffered(): number;
  log(msg: string, extra?: Record<string, unknown>): void;
}

/**
 * One client connection to the daemon: handshake, request dispatch, input frames, and the
 * stream of every session this connection attached to (a SessionSink).
 */
export class StubConnection implements SessionSink, HandlerConnection {
  readonly cid = nextConnectionId++;
  readonly attached = new Set<PtySession>();
  private readonly decoder = new FrameDecoder();
  private hello: HelloMessage | undefined;
  private linkId = '';
  private inputKey = '';
  private readonly failedInputs: { inputSeq: number; error: ReturnType<PtyRelayError['toJSON']> }[] = [];
  private saidGoodbye = false;
  private failed = false;
  private closed = false;
  private readonly background: BackgroundDelivery;
  private readonly out: ConnectionOutput;
  private readonly catchUp: HistoryCatchUp;
  /** Exits held back until their session's catch-up reached the head. */
  private readonly heldExits = new Map<PtySession, { info: PtyExitInfo; seq: number }>();

  constructor(
    private readonly socket: Socket,
    private readonly ctx: ConnectionContext,
  ) {
    this.background = new BackgroundDelivery(
      {
        data: (s, seq, d) => this.sendData(s, seq, d),
        fact: (s, seq, f) => this.sendFact(s, seq, f),
        background: (s, e) => this.sendBackground(s, e),
      },
      ctx.keepTailMin,
    );
    this.out = new ConnectionOutput(socket, {
      blocked: () => {
        for (const s of this.attached) s.gate.hold(this.gateReason);
      },
      unblocked: () => {
        for (const s of this.attached) s.gate.release(this.gateReason);
      },
      overCap: () => ctx.totalBuffered() > ctx.pendingCap,
    });
    this.catchUp = new HistoryCatchUp({
      send: (s, seq, d) => this.sendData(s, seq, d),
      buffered: () => this.out.buffered,
      caughtUp: (s) => {
        const held = this.heldExits.get(s);
        this.heldExits.delete(s);
        if (held) this.exit(s, held.info, held.seq);
      },
      lost: (s, seq, err) => {
        // Nothing is skipped silently: the relay reconnects and re-attaches from its seq (a reset).
        ctx.log('history replay lost its range; closing the link so it re-attaches', {
          cid: this.cid,
          id: s.id,
          seq,
          error: err?.message,
        });
        this.close();
      },
    });
    socket.setNoDelay?.(true);
    socket.on('data', (chunk) => this.onChunk(chunk));
    socket.on('close', () => this.close());
    socket.on('error', () => this.close());
  }

  /** Output written to the socket and not yet flushed to the kernel. */
  get buffered(): number {
    return this.out.buffered;
  }

  get gateReason(): string {
    return `conn-${this.cid}`;
  }

  send(message: unknown): void {
    if (!this.closed) this.out.frame(encodeJsonFrame(message));
  }

  sendWithBlob(message: unknown, blob: Uint8Array): void {
    if (!this.closed) this.out.frame(encodeJsonBlobFrame(message, blob));
  }

  /**
   * Starts streaming `s` to this connection; everything before `fromSeq` was sent in the reply.
   * With `catchUp`, the bytes from `fromSeq` are read from the history before live output.
   */
  attach(s: PtySession, fromSeq: number, catchUp = false): void {
    this.attached.add(s);
    s.addSink(this);
    s.credits.register(this.linkId, fromSeq);
    if (catchUp) this.catchUp.start(s, fromSeq);
    if (this.out.isBlocked) s.gate.hold(this.gateReason);
    s.refreshRingLimit();
  }

  /** Stops streaming `s`. A deliberate detach also drops this link's credit claim. */
  detach(s: PtySession, deliberate = true): void {
    this.out.batcher.drop(s);
    this.background.stop(s);
    this.catchUp.stop(s);
    this.heldExits.delete(s);
    this.attached.delete(s);
    s.removeSink(this);
    s.gate.release(this.gateReason);
    if (deliberate) s.credits.forget(this.linkId);
    else s.credits.lost(this.linkId);
    s.refreshRingLimit();
  }

  /**
   * The session is gone: nothing of it stays referenced here (a link that lives for days attaches
   * many terminals, and each one kept its RAM tail and screen model for as long as the link lived).
   * A link still catching up on it cannot finish (its log went with it): it closes, as when a
   * catch-up loses its range, and its relay re-attaches and hears the terminal is gone.
   */
  removed(s: PtySession): void {
    if (!this.attached.has(s)) return;
    if (this.catchUp.has(s)) {
      this.ctx.log('a terminal being caught up on was removed; closing the link so it re-attaches', {
        cid: this.cid,
        id: s.id,
      });
      this.close();
      return;
    }
    this.out.batcher.drop(s);
    this.background.stop(s);
    this.heldExits.delete(s);
    this.attached.delete(s);
    s.gate.release(this.gateReason);
  }

  data(s: PtySession, seq: number, data: Uint8Array): void {
    // A catching-up link gets these bytes from the history, in order.
    if (this.catchUp.has(s)) return;
    if (!this.background.data(s, seq, data) && !this.closed) this.out.data(s, seq, data);
  }

  fact(s: PtySession, seq: number, fact: PtyFact): void {
    if (!this.background.fact(s, seq, fact)) this.sendFact(s, seq, fact);
  }

  exit(s: PtySession, info: PtyExitInfo, seq: number): void {
    if (this.catchUp.has(s)) {
      this.heldExits.set(s, { info, seq });
      return;
    }
    this.background.exit(s, info, seq);
    this.send({ t: 'exit', id: s.id, incarnationId: s.incarnationId, seq, ...info });
  }

  /** Background mode on: keep-tail thinning, and this link stops holding the producer. */
  setBackground(s: PtySession): void {
    this.out.batcher.flush();
    s.credits.forget(this.linkId);
    this.background.start(s);
    s.refreshRingLimit();
  }

  /**
   * Background mode off: the caller already sent the snapshot and the bytes after it (or, with
   * `catchUp`, the bytes from `fromSeq` come from the history first).
   */
  setForeground(s: PtySession, fromSeq: number, catchUp = false): void {
    this.background.stop(s);
    s.credits.register(this.linkId, fromSeq);
    if (catchUp) this.catchUp.start(s, fromSeq);
    s.refreshRingLimit();
  }

  isBackground(s: PtySession): boolean {
    return this.background.has(s);
  }

  sendData(s: PtySession, seq: number, data: Uint8Array): void {
    if (!this.closed) this.out.dataNow(s, seq, data);
  }

  sendFact(s: PtySession, seq: number, fact: PtyFact): void {
    this.send({ t: 'fact', id: s.id, incarnationId: s.incarnationId, seq, fact });
  }

  sendBackground(s: PtySession, event: Record<string, unknown>): void {
    this.send({ t: 'bg', id: s.id, incarnationId: s.incarnationId, event });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.out.close();
    this.background.dispose();
    this.catchUp.dispose();
    for (const s of this.attached) this.detach(s, this.saidGoodbye);
    this.socket.destroy();
    this.ctx.onClose(this);
  }

  /**
   * The daemon ends on request: tells the peer (so it does not start another daemon in this one's
   * place) and closes once the peer did, or after STOPPING_LINGER_MS.
   */
  stopping(): Promise<void> {
    return this.sayLast({ t: 'stopping' }, STOPPING_LINGER_MS);
  }

  /**
   * Sends `message` as the link's last one and half-closes; the link closes when the peer closes
   * its end (it read everything) or after `lingerMs`. Destroying the socket at once, with the
   * peer's later bytes unread, makes the kernel reset the link, and the reset can reach the peer
   * before it read the message (the fuzz suite saw a protocol error lost that way).
   */
  private sayLast(message: unknown, lingerMs: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.send(message);
    this.out.flushNow();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(linger);
        this.close();
        resolve();
      };
      const linger = setTimeout(done, lingerMs);
      linger.unref();
      this.socket.once('close', done);
      this.socket.end();
    });
  }

  private onChunk(chunk: Buffer): void {
    // After a protocol error the link only waits to close: what the peer still sends is read and
    // dropped, so it does not sit unread (see failProtocol).
    if (this.failed) return;
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      this.failProtocol(err instanceof PtyRelayError ? err.message : String(err));
      return;
    }
    for (const f of frames) {
      if (this.closed) return;
      try {
        this.onFrame(f);
      } catch (err) {
        this.failProtocol(err instanceof PtyRelayError ? err.message : String(err));
        return;
      }
    }
  }

  private failProtocol(message: string): void {
    this.failed = true;
    this.ctx.log('closing connection after protocol error', { cid: this.cid, message });
    void this.sayLast({ t: 'error', error: { code: 'PROTOCOL_ERROR', message } }, PROTOCOL_ERROR_LINGER_MS);
  }

  private onFrame(f: Frame): void {
    if (!this.hello) {
      if (f.type !== FrameType.Json || !isObject(f.message) || f.message.t !== 'hello') {
        throw new PtyRelayError('PROTOCOL_ERROR', 'expected hello first');
      }
      const parsed = parseHello(f.message);
      if ('error' in parsed) throw new PtyRelayError('PROTOCOL_ERROR', `bad hello: ${parsed.error}`);
      this.onHello(parsed.hello);
      return;
    }
    if (f.type === FrameType.Input) {
      this.onInput(f.inputSeq, f.id, f.data);
      return;
    }
    if (f.type === FrameType.InputFrom) {
      this.onInput(f.inputSeq, f.id, f.data, f);
      return;
    }
    if (f.type === FrameType.Ack) {
      this.onAck(f.id, f.seq);
      return;
    }
    if (f.type !== FrameType.Json || !isObject(f.message)) {
      throw new PtyRelayError('PROTOCOL_ERROR', 'unexpected frame');
    }
    if (f.message.t === 'req') this.dispatch(parseMessage(requestSchema, f.message, 'req', 'PROTOCOL_ERROR'));
    else this.onControl(parseMessage(clientControlSchema, f.message, 'message', 'PROTOCOL_ERROR'));
  }

  /** Messages that need no reply: heartbeat, credit acks, goodbye. */
  private onControl(m: z.infer<typeof clientControlSchema>): void {
    switch (m.t) {
      case 'ping':
        this.send({ t: 'pong', n: m.n });
        return;
      case 'ack':
        this.onAck(m.id, m.seq);
        return;
      case 'goodbye':
        this.saidGoodbye = true;
        return;
    }
  }

  /** Credit from the relay (a binary frame, or JSON from an older relay). */
  private onAck(id: string, seq: number): void {
    const s = this.ctx.handler.find(id);
    if (s && this.attached.has(s)) s.credits.ack(this.linkId, seq);
  }

  private onHello(h: HelloMessage): void {
    if (h.protocol !== STUB_PROTOCOL_VERSION) {
      this.send({
        t: 'hello',
        protocol: STUB_PROTOCOL_VERSION,
        buildId: this.ctx.buildId,
        role: 'stub-daemon',
        pid: process.pid,
      });
      throw new PtyRelayError(
        'PROTOCOL_ERROR',
        `protocol ${h.protocol} not supported (daemon speaks ${STUB_PROTOCOL_VERSION})`,
      );
    }
    this.hello = h;
    if (h.legacy === true) this.ctx.onSuperseded();
    this.linkId = typeof h.linkId === 'string' ? h.linkId : `c${this.cid}`;
    this.inputKey = `${this.linkId}:${typeof h.inputEpoch === 'string' ? h.inputEpoch : this.cid}`;
    this.send({
      t: 'hello',
      protocol: STUB_PROTOCOL_VERSION,
      buildId: this.ctx.buildId,
      role: 'stub-daemon',
      pid: process.pid,
      idScope: 'host',
      binaryAcks: true,
      inputOrigin: true,
    });
  }

  private dispatch(m: z.infer<typeof requestSchema>): void {
    const params = m.params ?? {};
    const reply = (out: HandlerOutput) => {
      if (out.blob) this.sendWithBlob({ t: 'res', rid: m.rid, result: out.result }, out.blob);
      else this.send({ t: 'res', rid: m.rid, result: out.result });
    };
    this.ctx.handler
      .handle(this, m.method, params, reply)
      .then((out) => {
        if (out !== REPLIED) reply(out);
      })
      .catch((err: unknown) => {
        const e =
          err instanceof PtyRelayError
            ? err
            : new PtyRelayError('PROTOCOL_ERROR', (err as Error)?.message ?? String(err));
        this.send({ t: 'res', rid: m.rid, error: e.toJSON() });
      });
  }

  /**
   * Input frames are applied in order and at most once per link (a resent frame is dropped), and
   * at most once per client instance and terminal when the frame names its origin (a client's
   * resend through another relay is dropped too, and acknowledged as applied).
   */
  private onInput(inputSeq: number, id: string, data: Uint8Array, from?: InputOriginField): void {
    if (this.ctx.inputs.takeLink(this.inputKey, inputSeq)) {
      try {
        if (!from) this.ctx.handler.write(id, data);
        else if (!this.ctx.inputs.originApplied(from.origin, id, from.originSeq)) {
          this.ctx.handler.write(id, data);
          this.ctx.inputs.noteOrigin(from.origin, id, from.originSeq);
        }
      } catch (err) {
        const e = err instanceof PtyRelayError ? err : new PtyRelayError('PROTOCOL_ERROR', String(err));
        this.failedInputs.push({ inputSeq, error: e.toJSON() });
      }
    }
    // The acknowledgement rides with the echo (one write, one packet), or goes alone shortly.
    this.out.owe(this.inputAck);
  }

  /** The input acknowledgement as it stands: binary when the relay takes it and nothing failed. */
  private readonly inputAck = (): Uint8Array => {
    const upTo = this.ctx.inputs.linkUpTo(this.inputKey);
    const failed = this.failedInputs.splice(0);
    if (failed.length === 0 && this.hello?.binaryAcks === true) return encodeInputAckFrame(upTo);
    return encodeJsonFrame({ t: 'inputAck', upTo, ...(failed.length ? { failed } : {}) });
  };
}
