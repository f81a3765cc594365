import { randomUUID } from 'node:crypto';
import { PtyRelayError } from '../../provider/errors.js';
import type { InputAckMessage } from '../../provider/wire/messages.js';
import type { StubClient } from '../stub-link/stub-client.js';

/** Input held per session while the link is down (keystrokes and small pastes, not floods). */
export const MAX_QUEUED_INPUT_BYTES = 64 * 1024;

interface PendingInput {
  seq: number;
  id: string;
  data: Uint8Array;
  resolve: () => void;
  reject: (e: Error) => void;
}

/**
 * Exactly-once input for one host across reconnects. Every write gets a sequence number of this
 * logical link; frames stay pending until the daemon acknowledges them, are resent in order on a
 * new connection, and the daemon drops any it had already applied.
 */
export class InputChannel {
  /** Names this channel's sequence space at the daemon. */
  readonly epoch = randomUUID();
  private nextSeq = 1;
  private readonly pending: PendingInput[] = [];
  private client: StubClient | undefined;
  private offAck: (() => void) | undefined;

  constructor(private readonly maxQueuedBytes = MAX_QUEUED_INPUT_BYTES) {}

  /** A fresh connection: resend everything unacknowledged, in order. */
  connect(client: StubClient): void {
    this.disconnect();
    this.client = client;
    this.offAck = client.inputAcks.on((m) => this.onAck(m));
    for (const p of this.pending) client.sendInputFrame(p.seq, p.id, p.data);
  }

  disconnect(): void {
    this.offAck?.();
    this.offAck = undefined;
    this.client = undefined;
  }

  submit(id: string, data: Uint8Array): Promise<void> {
    const connected = this.client?.isOpen === true;
    if (!connected) {
      let queued = data.length;
      for (const p of this.pending) if (p.id === id) queued += p.data.length;
      if (queued > this.maxQueuedBytes) {
        return Promise.reject(
          new PtyRelayError(
            'INPUT_QUEUE_FULL',
            `more than ${this.maxQueuedBytes} bytes of input queued for ${id} while the link is down`,
          ),
        );
      }
    }
    const seq = this.nextSeq++;
    return new Promise((resolve, reject) => {
      this.pending.push({ seq, id, data, resolve, reject });
      if (connected) this.client!.sendInputFrame(seq, id, data);
    });
  }

  /** Fails every pending write (the host is given up for good). */
  failAll(err: Error): void {
    for (const p of this.pending.splice(0)) p.reject(err);
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  private onAck(m: InputAckMessage): void {
    const failed = new Map((m.failed ?? []).map((f) => [f.inputSeq, f.error]));
    while (this.pending.length > 0 && this.pending[0].seq <= m.upTo) {
      const p = this.pending.shift()!;
      const err = failed.get(p.seq);
      if (err) p.reject(PtyRelayError.from(err));
      else p.resolve();
    }
  }
}
