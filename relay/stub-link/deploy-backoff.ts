import type { LinkState } from '../../provider/contract.js';
import type { PtyRelayError } from '../../provider/errors.js';
import { ReconnectLadder } from '../../provider/reconnect-ladder.js';

/**
 * Waits after a failed stub deploy; the last step repeats. A deploy costs the host real work (a
 * probe with login shells, maybe an upload) and its causes (no node, a full disk, no upload
 * method) do not heal in seconds: the reconnect ladder's 250 ms steps made 27 attempts in 30 s.
 * No jitter: the first retry must never come sooner than 30 s.
 */
export const DEPLOY_RETRY_STEPS_MS: readonly number[] = [30_000, 60_000, 120_000, 300_000, 600_000];

/**
 * When a host whose deploy failed may be tried again, and the `deploy-failed` link state that says
 * so. Requests before that time fail at once with the recorded error instead of deploying again.
 */
export class DeployBackoff {
  private readonly ladder = new ReconnectLadder({ steps: DEPLOY_RETRY_STEPS_MS, jitter: 0 });
  private failure: { error: PtyRelayError; nextAttemptAt: number } | undefined;

  /** Records a failed deploy; returns the state to publish and the delay until the next attempt. */
  failed(error: PtyRelayError, now: number): { state: LinkState; delayMs: number } {
    // The ladder never gives up here (no giveUpAfter), so there is always a next step.
    const step = this.ladder.next() ?? {
      attempt: this.ladder.attempts,
      delayMs: DEPLOY_RETRY_STEPS_MS.at(-1)!,
    };
    const nextAttemptAt = now + step.delayMs;
    this.failure = { error, nextAttemptAt };
    const state: LinkState = {
      state: 'deploy-failed',
      code: error.code,
      reason: error.message,
      retryable: error.retryable,
      attempts: step.attempt,
      nextAttemptAt,
    };
    return { state, delayMs: step.delayMs };
  }

  /** The recorded error while it is too early to deploy again, else undefined. */
  blocked(now: number): PtyRelayError | undefined {
    return this.failure && now < this.failure.nextAttemptAt ? this.failure.error : undefined;
  }

  /** A deploy succeeded: the next failure waits the first step again. */
  reset(): void {
    this.failure = undefined;
    this.ladder.reset();
  }
}
