import { PtyRelayError } from '../provider/errors.js';
import { encodeInputFrame } from './wire.js';

/** Input kept for resending (typed while the link is down, or not yet acknowledged). */
const MAX_QUEUED_BYTES = 256 * 1024;

interface Queued {
  seq: number;
  frame: Uint8Array;
  sent: boolean;
}

/**
 * Exactly-once input (docs/relay-client.md, "Input"): every frame gets the next inputSeq of this
 * page and is kept until the relay acknowledges it. After a reconnect to the same relay process
 * (`hello` answers `known`) unacknowledged frames are resent and the relay drops what it already
 * applied; to a relay that lost its record (`fresh`) frames already sent are dropped with an
 * error instead of being typed twice.
 */
export class InputQueue {
  private nextSeq = 1;
  private queue: Queued[] = [];
  private bytes = 0;

  constructor(
    private readonly send: (frame: Uint8Array) => boolean,
    private readonly fail: (err: PtyRelayError) => void,
  ) {}

  write(id: string, data: string): void {
    const frame = encodeInputFrame(id, this.nextSeq, data);
    if (this.bytes + frame.length > MAX_QUEUED_BYTES) {
      this.fail(new PtyRelayError('INPUT_QUEUE_FULL', 'too much input waiting for the relay; dropped'));
      return;
    }
    const q: Queued = { seq: this.nextSeq++, frame, sent: false };
    this.queue.push(q);
    this.bytes += frame.length;
    q.sent = this.send(frame);
  }

  acknowledge(
    upTo: number,
    failed: { inputSeq: number; error: { code: string; message: string } }[] = [],
  ): void {
    while (this.queue.length > 0 && this.queue[0]!.seq <= upTo)
      this.bytes -= this.queue.shift()!.frame.length;
    for (const f of failed)
      this.fail(PtyRelayError.from({ code: f.error.code as never, message: f.error.message }));
  }

  /** After a new handshake: resend what the relay may not have applied. */
  resume(relayKnowsUs: boolean): void {
    if (!relayKnowsUs && this.queue.some((q) => q.sent)) {
      this.fail(
        new PtyRelayError(
          'LINK_CLOSED',
          'the relay restarted; input sent before may or may not have arrived',
          { maybeApplied: true },
        ),
      );
      this.queue = this.queue.filter((q) => !q.sent);
      this.bytes = this.queue.reduce((n, q) => n + q.frame.length, 0);
    }
    for (const q of this.queue) q.sent = this.send(q.frame) || q.sent;
  }
}
