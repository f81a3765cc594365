import { DEFAULT_CREDIT_WINDOW, DEFAULT_CREDIT_WINDOW_MAX } from '../flow/credit-window.js';
import { DEFAULT_SCROLLBACK_IDLE_MS } from '../session/model-scrollback.js';
import { KEEP_TAIL_MIN } from './background-delivery.js';

export const DEFAULT_RING_BYTES = 4 * 1024 * 1024;
export const DEFAULT_SCROLLBACK_ROWS = 10_000;
/**
 * Ring of a session every attached link has put in the background: those links receive a thinned
 * tail and get a snapshot when they bring it back, so a long exact history buys nothing there.
 */
export const DEFAULT_BACKGROUND_RING_BYTES = 512 * 1024;
const MIN_BACKGROUND_RING_BYTES = 4 * 1024;
/** Ring ceiling: a replay must fit one frame (32 MiB) with room to spare. */
export const MAX_RING_BYTES = 16 * 1024 * 1024;
/** Output buffered for all connections of the daemon before every session feeding them pauses. */
export const DEFAULT_PENDING_CAP = 64 * 1024 * 1024;

/** The daemon's memory and flow-control bounds (flags of `stub.cjs daemon`). */
export interface DaemonLimits {
  ringBytes: number;
  backgroundRingBytes: number;
  scrollbackRows: number;
  /** Idle time after which a session's model drops its scrollback (0: never). */
  scrollbackIdleMs: number;
  creditWindow: number;
  creditWindowMax: number;
  keepTailMin: number;
  pendingCap: number;
}

/** Fills defaults and checks relations; throws with a message naming the flag. */
export function resolveLimits(given: Partial<DaemonLimits>): DaemonLimits {
  const l: DaemonLimits = {
    ringBytes: given.ringBytes ?? DEFAULT_RING_BYTES,
    backgroundRingBytes:
      given.backgroundRingBytes ??
      Math.min(DEFAULT_BACKGROUND_RING_BYTES, given.ringBytes ?? DEFAULT_RING_BYTES),
    scrollbackRows: given.scrollbackRows ?? DEFAULT_SCROLLBACK_ROWS,
    scrollbackIdleMs: given.scrollbackIdleMs ?? DEFAULT_SCROLLBACK_IDLE_MS,
    creditWindow: given.creditWindow ?? DEFAULT_CREDIT_WINDOW,
    creditWindowMax:
      given.creditWindowMax ??
      Math.max(
        given.creditWindow ?? DEFAULT_CREDIT_WINDOW,
        Math.min(DEFAULT_CREDIT_WINDOW_MAX, given.pendingCap ?? DEFAULT_PENDING_CAP),
      ),
    keepTailMin: given.keepTailMin ?? KEEP_TAIL_MIN,
    pendingCap: given.pendingCap ?? DEFAULT_PENDING_CAP,
  };
  const fail = (m: string) => {
    throw new RangeError(m);
  };
  if (!Number.isInteger(l.scrollbackIdleMs) || l.scrollbackIdleMs < 0)
    fail(`--scrollback-idle-ms must be a non-negative integer, got ${l.scrollbackIdleMs}`);
  if (l.ringBytes > MAX_RING_BYTES) fail(`--ring-bytes ${l.ringBytes} exceeds ${MAX_RING_BYTES}`);
  // A window larger than the ring could let unacknowledged output be overwritten before replay.
  if (l.creditWindow > l.ringBytes)
    fail(`--credit-window ${l.creditWindow} must not exceed --ring-bytes ${l.ringBytes}`);
  if (l.creditWindowMax < l.creditWindow)
    fail(`--credit-window-max ${l.creditWindowMax} must be at least --credit-window ${l.creditWindow}`);
  if (l.keepTailMin > l.ringBytes)
    fail(`--keep-tail ${l.keepTailMin} must not exceed --ring-bytes ${l.ringBytes}`);
  if (l.backgroundRingBytes > l.ringBytes || l.backgroundRingBytes < MIN_BACKGROUND_RING_BYTES)
    fail(
      `--background-ring-bytes ${l.backgroundRingBytes} must be between ${MIN_BACKGROUND_RING_BYTES} and --ring-bytes ${l.ringBytes}`,
    );
  if (l.pendingCap < l.creditWindowMax)
    fail(`--pending-cap ${l.pendingCap} must be at least --credit-window-max ${l.creditWindowMax}`);
  return l;
}
