import type { PtyRelayError } from '../provider/errors.js';
import { InputQueue } from '../provider/input/input-queue.js';
import { encodeInputFrame } from './wire.js';

/** The relay as the queue's target: one relay process per page (a new one answers `fresh`). */
const RELAY = 'relay';
const utf8 = new TextEncoder();

/**
 * The page's side of exactly-once input (docs/relay-client.md, "Input"): the codebase's one
 * {@link InputQueue} sending input frames over the page's WebSocket. Every write gets the next
 * inputSeq of this page and is kept until the relay acknowledges it. After a reconnect to the
 * same relay process (`hello` answers `known`) unacknowledged frames are resent and the relay
 * drops what it already applied; to a relay that lost its record (`fresh`: restarted, or another
 * relay behind a balancer) frames already sent are resent marked as such when the relay forwards
 * input origins to daemons that apply each once (`inputOrigin`), else they fail with LINK_CLOSED
 * instead of being typed twice. Input typed while the link is down is
 * bounded and expires like everywhere else (INPUT_QUEUE_FULL, INPUT_EXPIRED).
 */
export class PageInput {
  private readonly queue: InputQueue;

  constructor(
    send: (frame: Uint8Array) => boolean,
    private readonly fail: (err: PtyRelayError) => void,
  ) {
    this.queue = new InputQueue({
      send: (p) => send(encodeInputFrame(p.id, p.seq, p.data, p.resent === true)),
      peer: 'the relay',
    });
  }

  write(id: string, data: string): void {
    this.queue.submit(id, utf8.encode(data)).catch((err: PtyRelayError) => this.fail(err));
  }

  acknowledge(
    upTo: number,
    failed: { inputSeq: number; error: { code: string; message: string } }[] = [],
  ): void {
    this.queue.onAck({ upTo, failed });
  }

  /** The link dropped: input now waits (bounded, and for a limited time). */
  linkDown(): void {
    this.queue.disconnected();
  }

  /**
   * After a new handshake: resend what the relay may not have applied. `endToEnd`: the relay
   * forwards input origins (hello `inputOrigin`), so frames it does not know are resent too.
   */
  resume(relayKnowsUs: boolean, endToEnd: boolean): void {
    this.queue.connected(RELAY, !relayKnowsUs, endToEnd);
  }
}
