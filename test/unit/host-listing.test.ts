import { describe, expect, it } from 'vitest';
import type { LinkState } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { askHosts, unavailableByError, unavailableByState } from '../../relay/core/host-listing.js';

const never = () => new Promise<string[]>(() => {});

describe('askHosts', () => {
  it('answers by the deadline with the hosts that answered and names the rest', async () => {
    const asked: string[] = [];
    const late: string[] = [];
    let finishSlow: (rows: string[]) => void = () => {};
    const states: Record<string, LinkState> = {
      a: { state: 'connected' },
      slow: { state: 'connected' },
      down: { state: 'reconnecting', attempt: 3, nextInMs: 4000, lastError: 'refused', cause: 'sshd' },
      fresh: { state: 'idle' },
    };
    const t0 = Date.now();
    const r = await askHosts(['a', 'slow', 'down', 'fresh'], {
      stateOf: (h) => states[h]!,
      deadlineMs: 150,
      late: (h, rows) => late.push(`${h}:${rows.join()}`),
      ask: (h) => {
        asked.push(h);
        if (h === 'a') return Promise.resolve(['a/pty-1']);
        if (h === 'slow') return new Promise((resolve) => (finishSlow = resolve));
        return Promise.reject(
          new PtyRelayError('HOSTKEY_UNKNOWN', 'not in known_hosts', { presented: 'SHA256:x' }),
        );
      },
    });
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(asked).toEqual(['a', 'slow', 'fresh']); // a host whose link is retrying is not asked
    expect(r.rows).toEqual(['a/pty-1']);
    expect(r.unavailable.map((u) => [u.host, u.status])).toEqual([
      ['slow', 'connecting'],
      ['down', 'unreachable'],
      ['fresh', 'untrusted'],
    ]);
    expect(r.unavailable[1]).toMatchObject({ cause: 'sshd', reason: 'refused (attempt 3, next in 4 s)' });
    expect(r.unavailable[2]).toMatchObject({ fingerprint: 'SHA256:x', fix: 'ptyrelay hosts trust fresh' });
    finishSlow(['slow/pty-2']);
    await new Promise((r) => setTimeout(r, 10));
    expect(late).toEqual(['slow:slow/pty-2']);
  });

  it('returns as soon as every host answered', async () => {
    const t0 = Date.now();
    const r = await askHosts(['a'], { stateOf: () => ({ state: 'connected' }), ask: async () => [1, 2] });
    expect(r).toEqual({ rows: [1, 2], unavailable: [] });
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('a host that never answers costs only its own rows', async () => {
    const r = await askHosts(['x', 'y'], {
      stateOf: (h) => (h === 'x' ? { state: 'connecting' } : { state: 'connected' }),
      deadlineMs: 50,
      ask: (h) => (h === 'x' ? never() : Promise.resolve([h])),
    });
    expect(r.rows).toEqual(['y']);
    expect(r.unavailable).toEqual([
      { host: 'x', status: 'connecting', reason: 'still connecting after 0.05 s' },
    ]);
  });
});

describe('a host already known to be slow', () => {
  it('is not asked nor waited for again', async () => {
    const asked: string[] = [];
    const t0 = Date.now();
    const r = await askHosts(['hung', 'ok'], {
      stateOf: () => ({ state: 'connecting' }),
      known: (h) =>
        h === 'hung' ? { host: h, status: 'connecting', reason: 'still connecting after 1.8 s' } : undefined,
      deadlineMs: 5000,
      ask: (h) => {
        asked.push(h);
        return h === 'hung' ? never() : Promise.resolve([h]);
      },
    });
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(asked).toEqual(['ok']);
    expect(r).toEqual({
      rows: ['ok'],
      unavailable: [{ host: 'hung', status: 'connecting', reason: 'still connecting after 1.8 s' }],
    });
  });
});

describe('why a host is left out', () => {
  it('a deploy failure waiting for its next attempt is not asked; past it, it is', () => {
    const state: LinkState = {
      state: 'deploy-failed',
      code: 'DEPLOY_FAILED',
      reason: 'no space',
      retryable: true,
      attempts: 2,
      nextAttemptAt: 10_000,
    };
    expect(unavailableByState('h', state, 5_000)).toMatchObject({
      status: 'deploy-failed',
      code: 'DEPLOY_FAILED',
    });
    expect(unavailableByState('h', state, 10_000)).toBeUndefined();
    expect(unavailableByState('h', { state: 'connected' })).toBeUndefined();
  });

  it('errors are sorted by what a person does about them', () => {
    expect(unavailableByError('h', new PtyRelayError('HOSTKEY_MISMATCH', 'changed')).fix).toBe(
      'ptyrelay hosts trust h --replace',
    );
    expect(unavailableByError('h', new PtyRelayError('CONNECT_FAILED', 'refused')).status).toBe(
      'unreachable',
    );
    expect(unavailableByError('h', new PtyRelayError('DAEMON_START_FAILED', 'bad option')).status).toBe(
      'deploy-failed',
    );
    expect(unavailableByError('h', new Error('boom'))).toEqual({
      host: 'h',
      status: 'error',
      reason: 'boom',
    });
  });
});
