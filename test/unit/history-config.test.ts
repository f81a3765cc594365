import { describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { historyDaemonArgs } from '../../relay/core/history-config.js';
import { validateConfig } from '../../relay/service/config.js';
import { hostDaemonArgs } from '../../relay/ssh/host-daemon-args.js';

const KiB = 1024;
const MiB = 1024 * KiB;

function invalid(raw: unknown): string {
  try {
    validateConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(PtyRelayError);
    expect((err as PtyRelayError).code).toBe('CONFIG_INVALID');
    return (err as Error).message;
  }
  throw new Error('config was accepted');
}

describe('history settings in the relay config', () => {
  it('accepts them at the top and per host, and turns them into daemon flags', () => {
    const c = validateConfig({
      history: { sessionBytes: 8 * MiB, segmentBytes: 1 * MiB, tailBytes: 128 * KiB },
      hosts: {
        build1: { host: 'b', history: { enabled: false } },
        gpu: { host: 'g', history: { freePercent: 2.5 } },
      },
    });
    expect(c.history).toEqual({ sessionBytes: 8 * MiB, segmentBytes: 1 * MiB, tailBytes: 128 * KiB });
    expect(c.hosts.build1.history).toEqual({ enabled: false });
    expect(historyDaemonArgs(c.history)).toEqual([
      ...['--history-segment-bytes', String(1 * MiB)],
      ...['--history-session-bytes', String(8 * MiB)],
      ...['--tail-bytes', String(128 * KiB)],
    ]);
    expect(historyDaemonArgs(c.hosts.build1.history)).toEqual(['--history', 'off']);
    expect(historyDaemonArgs(c.hosts.gpu.history)).toEqual(['--history-free-percent', '2.5']);
    expect(historyDaemonArgs(undefined)).toEqual([]);
    expect(validateConfig({}).history).toBeUndefined();
  });

  it('names the field in each message, with the daemon own rules', () => {
    expect(invalid({ history: { sessionBytes: '1' } })).toMatch(/^history\.sessionBytes must be an integer/);
    expect(invalid({ history: { enabled: 'no' } })).toMatch(/^history\.enabled must be true or false/);
    expect(invalid({ history: { cap: 1 } })).toMatch(/^history\.cap is not a known setting/);
    expect(invalid({ history: { freePercent: 0 } })).toMatch(
      /^history\.freePercent must be a number in \(0, 100\]/,
    );
    expect(invalid({ history: { segmentBytes: 1024 } })).toMatch(
      /^history\.segmentBytes 1024 must be between 65536 and 67108864/,
    );
    expect(invalid({ history: { sessionBytes: 4 * MiB } })).toBe(
      `history.sessionBytes ${4 * MiB} must be at least twice history.segmentBytes ${4 * MiB}`,
    );
    expect(invalid({ hosts: { build1: { host: 'b', history: { hostBytes: 32 * MiB } } } })).toBe(
      `hosts.build1.history.hostBytes ${32 * MiB} must be at least hosts.build1.history.sessionBytes ${64 * MiB}`,
    );
    expect(invalid({ limits: { ringBytes: 1 * MiB }, history: { tailBytes: 2 * MiB } })).toBe(
      `history.tailBytes (${2 * MiB}) must not exceed limits.ringBytes (${1 * MiB})`,
    );
    expect(invalid({ hosts: { b: { host: 'b', history: [] } } })).toMatch(
      /^hosts\.b\.history must be an object/,
    );
  });
});

describe('daemon flags of an SSH host', () => {
  it('puts the host history settings before the relay-wide ones (the daemon takes the first)', () => {
    const c = validateConfig({
      history: { sessionBytes: 8 * MiB, tailBytes: 128 * KiB },
      hosts: {
        build1: { host: 'b', stateDir: '~/st', history: { sessionBytes: 2 * MiB, segmentBytes: 256 * KiB } },
      },
    });
    const args = hostDaemonArgs(historyDaemonArgs(c.history), c.hosts.build1);
    expect(args).toEqual([
      ...['--history-segment-bytes', String(256 * KiB), '--history-session-bytes', String(2 * MiB)],
      ...['--history-session-bytes', String(8 * MiB), '--tail-bytes', String(128 * KiB)],
      ...['--state-dir', '~/st'],
    ]);
    // What the daemon reads (first occurrence, agent-stub/main.ts `flag`).
    const first = (name: string) => args[args.indexOf(name) + 1];
    expect(first('--history-session-bytes')).toBe(String(2 * MiB));
    expect(first('--tail-bytes')).toBe(String(128 * KiB));
  });
});
