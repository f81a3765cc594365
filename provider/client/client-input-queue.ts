import { InputQueue } from '../input/input-queue.js';
import { encodeInputFrame } from '../wire/frame-codec.js';

export { MAX_QUEUED_INPUT_BYTES } from '../input/input-queue.js';

/**
 * RelayClient's half of exactly-once input: the shared {@link InputQueue} sending binary input
 * frames to the relay. The target is the relay process (`serverInstanceId`); a relay that
 * restarted or forgot this instance (`hello.input === 'fresh'`), or another relay process behind
 * a balancer, cannot de-duplicate frames sent before by its own ledger: when it forwards input
 * origins to daemons that apply each client's input once (`hello.inputOrigin`), those frames are
 * resent as InputResent frames; otherwise they fail with LINK_CLOSED (`maybeApplied`) instead of
 * risking a second application. Frames queued while no relay was reachable are sent normally,
 * unless they aged out.
 */
export class ClientInputQueue extends InputQueue {
  constructor(
    sendFrame: (frame: Uint8Array) => boolean,
    opts: { maxQueuedBytes?: number; maxQueueAgeMs?: number } = {},
  ) {
    super({
      send: (p) => sendFrame(encodeInputFrame(p.id, p.seq, p.data, p.resent === true)),
      peer: 'the relay',
      ...opts,
    });
  }
}
