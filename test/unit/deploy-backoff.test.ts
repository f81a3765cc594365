import { describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { DEPLOY_RETRY_STEPS_MS, DeployBackoff } from '../../relay/stub-link/deploy-backoff.js';

describe('DeployBackoff', () => {
  it('waits at least 30 s, then longer each time, and blocks requests until then', () => {
    const b = new DeployBackoff();
    const err = new PtyRelayError('DISK_FULL', 'full');
    let now = 1_000_000;
    const delays: number[] = [];
    for (let i = 0; i < DEPLOY_RETRY_STEPS_MS.length + 2; i++) {
      const { state, delayMs } = b.failed(err, now);
      if (state.state !== 'deploy-failed') throw new Error('state');
      expect(state).toMatchObject({ code: 'DISK_FULL', reason: 'full', retryable: false, attempts: i + 1 });
      expect(state.nextAttemptAt).toBe(now + delayMs);
      expect(b.blocked(now + delayMs - 1)).toBe(err);
      expect(b.blocked(now + delayMs)).toBeUndefined();
      delays.push(delayMs);
      now += delayMs;
    }
    expect(delays[0]).toBeGreaterThanOrEqual(30_000);
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1]!);
    expect(delays[1]).toBeGreaterThan(delays[0]!);
    b.reset();
    expect(b.blocked(now)).toBeUndefined();
    expect(b.failed(err, now).delayMs).toBe(DEPLOY_RETRY_STEPS_MS[0]);
  });
});
