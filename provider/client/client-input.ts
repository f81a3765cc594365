import { PtyRelayError } from '../errors.js';
import { encodeInputFrame } from '../wire/frame-codec.js';
import type { InputAckParams } from './relay-protocol.js';

/** Input held per session while the relay is unreachable (keystrokes and small pastes). */
export const MAX_QUEUED_INPUT_BYTES = 64 * 1024;

interface PendingInput {
  inputSeq: number;
  id: string;
  data: Uint8Array;
  /** serverInstanceId of the relay the frame was sent to (undefined: never sent). */
  sentTo?: string;
  resolve: () => void;
  reject: (e: Error) => void;
}

/**
 * RelayClient's half of exactly-once input: every write gets the next inputSeq of this client
 * instance and stays pending until a `ptyrelay/inputAck` covers it. After a reconnect to the same
 * relay everything pending is resent with its original inputSeq (the relay drops what it already
 * applied). Frames sent to a relay that has since lost its record of them (restarted, or the
 * record expired) cannot be de-duplicated: they fail with LINK_CLOSED rather than risk a second
 * application; frames queued while no relay was reachable are sent normally.
 */
export class ClientInputQueue {
  private nextSeq = 1;
  private readonly pending: PendingInput[] = [];
  /** The relay process frames currently go to; undefined while disconnected. */
  private target: string | undefined;

  constructor(
    private readonly sendFrame: (frame: Uint8Array) => boolean,
    private readonly maxQueuedBytes = MAX_QUEUED_INPUT_BYTES,
  ) {}

  submit(id: string, data: Uint8Array): Promise<void> {
    if (this.target === undefined) {
      let queued = data.length;
      for (const p of this.pending) if (p.id === id && p.sentTo === undefined) queued += p.data.length;
      if (queued > this.maxQueuedBytes) {
        return Promise.reject(
          new PtyRelayError(
            'INPUT_QUEUE_FULL',
            `more than ${this.maxQueuedBytes} bytes of input queued for ${id} while the relay is unreachable`,
          ),
        );
      }
    }
    const inputSeq = this.nextSeq++;
    return new Promise((resolve, reject) => {
      const p: PendingInput = { inputSeq, id, data, resolve, reject };
      this.pending.push(p);
      if (this.target !== undefined) this.send(p, this.target);
    });
  }

  /**
   * The link is up again (to relay process `serverInstanceId`): resend what is pending, in order.
   * When the relay has no record of this instance's input (`fresh`), frames sent earlier may or
   * may not have been applied; they fail with LINK_CLOSED rather than risk a second application.
   */
  connected(serverInstanceId: string, fresh: boolean): void {
    this.target = serverInstanceId;
    for (let i = 0; i < this.pending.length; ) {
      const p = this.pending[i];
      if (p.sentTo !== undefined && (fresh || p.sentTo !== serverInstanceId)) {
        this.pending.splice(i, 1);
        p.reject(
          new PtyRelayError('LINK_CLOSED', 'the relay lost track of this input while it was in flight', {
            maybeApplied: true,
          }),
        );
        continue;
      }
      this.send(p, serverInstanceId);
      i++;
    }
  }

  disconnected(): void {
    this.target = undefined;
  }

  onAck(m: InputAckParams): void {
    const failed = new Map((m.failed ?? []).map((f) => [f.inputSeq, f.error]));
    while (this.pending.length > 0 && this.pending[0].inputSeq <= m.upTo) {
      const p = this.pending.shift()!;
      const err = failed.get(p.inputSeq);
      if (err) p.reject(PtyRelayError.from(err));
      else p.resolve();
    }
  }

  failAll(err: Error): void {
    for (const p of this.pending.splice(0)) p.reject(err);
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  private send(p: PendingInput, target: string): void {
    if (this.sendFrame(encodeInputFrame(p.id, p.inputSeq, p.data))) p.sentTo = target;
  }
}
