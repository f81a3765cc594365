import { randomUUID } from 'node:crypto';
import type { PtyInputOrigin } from '../../provider/contract.js';
import type { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import { InputQueue } from '../../provider/input/input-queue.js';
import type { InputAckMessage } from '../../provider/wire/messages.js';

export { MAX_QUEUED_INPUT_BYTES } from '../../provider/input/input-queue.js';

/** What the channel needs of a connection to the daemon (relay/stub-link/stub-client.ts has it). */
export interface InputConnection {
  readonly isOpen: boolean;
  /** `origin`: where the input came from, forwarded when the daemon takes it (see InputFrom frames). */
  sendInputFrame(inputSeq: number, id: string, data: Uint8Array, origin?: PtyInputOrigin): void;
  readonly inputAcks: Emitter<InputAckMessage>;
  /** The daemon de-duplicates input by origin (its hello said `inputOrigin`). */
  readonly takesInputOrigin: boolean;
}

/**
 * Exactly-once input for one host across reconnects: the shared {@link InputQueue} sending input
 * frames over the host's stub link. Every write gets a sequence number of this logical link
 * (`epoch`); frames stay pending until the daemon acknowledges them, are resent in order on a new
 * connection, and the daemon drops any it had already applied. Input that waited longer than
 * `maxQueueAgeMs` for the link, or whose owner detached, is discarded instead of sent.
 */
export class InputChannel {
  /** Names this channel's sequence space at the daemon. */
  readonly epoch = randomUUID();
  private readonly queue: InputQueue;
  private client: InputConnection | undefined;
  private offAck: (() => void) | undefined;

  constructor(opts: { maxQueuedBytes?: number; maxQueueAgeMs?: number } = {}) {
    this.queue = new InputQueue({
      send: (p) => {
        if (!this.client?.isOpen) return false;
        this.client.sendInputFrame(p.seq, p.id, p.data, p.origin);
        return true;
      },
      // A client's resend may have been applied through another relay: only a daemon that
      // de-duplicates by origin may get it.
      refuse: (p) =>
        p.origin?.resent === true && this.client?.isOpen && !this.client.takesInputOrigin
          ? new PtyRelayError(
              'LINK_CLOSED',
              `the daemon serving ${p.id} cannot tell whether this input, resent after a relay switch, was applied`,
              { maybeApplied: true },
            )
          : undefined,
      ...opts,
    });
  }

  /** A fresh connection: resend everything unacknowledged (and young enough), in order. */
  connect(client: InputConnection): void {
    this.disconnect();
    this.client = client;
    this.offAck = client.inputAcks.on((m) => this.queue.onAck(m));
    this.queue.connected(this.epoch);
  }

  disconnect(): void {
    this.offAck?.();
    this.offAck = undefined;
    this.client = undefined;
    this.queue.disconnected();
  }

  submit(
    id: string,
    data: Uint8Array,
    tags: { owner?: string; origin?: PtyInputOrigin } = {},
  ): Promise<void> {
    return this.queue.submit(id, data, tags);
  }

  /** Discards input of `owner` (for local id `id`, or all) not yet sent; returns the bytes. */
  dropQueued(which: { owner?: string; id?: string }, reason: 'detached' | 'gone'): number {
    return this.queue.dropQueued(which, reason);
  }

  /** Fails every pending write (the host is given up for good). */
  failAll(err: Error): void {
    this.queue.failAll(err);
  }

  get pendingCount(): number {
    return this.queue.pendingCount;
  }
}
