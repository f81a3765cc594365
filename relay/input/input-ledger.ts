import { createHash } from 'node:crypto';
import type { InputAckParams } from '../../provider/client/relay-protocol.js';
import { PtyRelayError, type PtyRelayErrorShape } from '../../provider/errors.js';

/** Failed frames remembered per ledger, so a resent one is reported as failed again. */
const FAILED_MEMORY = 256;
/** A jump in inputSeq larger than this while frames are in flight rebases instead of filling. */
const MAX_GAP_FILL = 4096;

function errorShape(err: unknown): PtyRelayErrorShape {
  return err instanceof PtyRelayError
    ? err.toJSON()
    : { code: 'PROTOCOL_ERROR', message: (err as Error)?.message ?? String(err) };
}

/**
 * A client instance's name in input origins (provider/contract.ts PtyInputOrigin): a digest of its
 * client and instance ids, the same on every relay process, short and of fixed length on the wire.
 */
export function inputOriginOf(instanceKey: string): string {
  return createHash('sha256').update(instanceKey).digest('base64url').slice(0, 22);
}

/**
 * The relay's half of RelayClient's exactly-once input (pure, no I/O): one ledger per client
 * instance records which inputSeqs were applied, so frames resent after a reconnect are not
 * applied twice, and produces the cumulative `ptyrelay/inputAck`s (input-frames.ts feeds it). Both
 * halves keep the rules of docs/relay-client.md ("Input: exactly once").
 */
export class InputLedger {
  /** Where acks go: the instance's current connection (undefined while it has none). */
  sink: ((ack: InputAckParams) => void) | undefined;
  /** Highest inputSeq received; -1 before the first. */
  private lastSeen = -1;
  /** Every inputSeq <= applied is done (applied or failed). */
  private applied = -1;
  private readonly done = new Set<number>();
  private readonly failed = new Map<number, PtyRelayErrorShape>();

  /**
   * A frame arrived. Returns true when it must be applied now (then call `finish` once done);
   * false for a duplicate, which is acknowledged again if it was already done.
   */
  receive(inputSeq: number): boolean {
    const idle = this.applied === this.lastSeen;
    const gap = inputSeq - this.lastSeen - 1;
    // A fresh ledger (e.g. a restarted relay) starts where the client's numbering is.
    if (this.lastSeen < 0 || (gap > 0 && (idle || gap > MAX_GAP_FILL))) {
      for (const s of this.done) if (s < inputSeq) this.done.delete(s);
      this.lastSeen = this.applied = inputSeq - 1;
    }
    if (inputSeq <= this.lastSeen) {
      if (inputSeq <= this.applied) this.ack(inputSeq);
      return false;
    }
    for (let s = this.lastSeen + 1; s < inputSeq; s++) this.done.add(s);
    this.lastSeen = inputSeq;
    return true;
  }

  /** The frame `inputSeq` was applied (or failed with `err`); acks whatever became contiguous. */
  finish(inputSeq: number, err?: unknown): void {
    const prev = this.applied;
    this.done.add(inputSeq);
    if (err !== undefined) {
      this.failed.set(inputSeq, errorShape(err));
      if (this.failed.size > FAILED_MEMORY) this.failed.delete(this.failed.keys().next().value!);
    }
    while (this.done.delete(this.applied + 1)) this.applied++;
    if (this.applied > prev) this.ack(prev + 1);
  }

  /** Sends `upTo` with the failures remembered in `[since, upTo]`. */
  private ack(since: number): void {
    const failed = [...this.failed]
      .filter(([s]) => s >= since && s <= this.applied)
      .map(([inputSeq, error]) => ({ inputSeq, error }));
    this.sink?.(failed.length > 0 ? { upTo: this.applied, failed } : { upTo: this.applied });
  }
}
