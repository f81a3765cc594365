import { describe, expect, it } from 'vitest';
import { isPtyRelayError } from '../../provider/errors.js';
import { DEFAULT_READINESS, resolveReadinessConfig } from '../../provider/readiness-config.js';
import {
  agentReadParamsSchema,
  agentSendParamsSchema,
  agentSendResultSchema,
  MAX_AGENT_SEND_BYTES,
  parseWire,
} from '../../provider/wire/agent-messages.js';
import { readinessDaemonArgs } from '../../relay/agents/agent-config.js';
import { validateConfig } from '../../relay/service/config.js';

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(isPtyRelayError(err, 'CONFIG_INVALID')).toBe(true);
    return (err as Error).message;
  }
  throw new Error('expected CONFIG_INVALID');
}

describe('readiness config', () => {
  it('defaults: 50 ms poll, 150 ms prompt grace, 5 s idle, 256 KiB reads', () => {
    expect(resolveReadinessConfig({}, 4 * 1024 * 1024)).toEqual(DEFAULT_READINESS);
    expect(DEFAULT_READINESS.maxReadBytes).toBe(256 * 1024);
  });

  it('prompt grace below the poll interval is refused, naming the field', () => {
    const msg = failure(() => resolveReadinessConfig({ pollIntervalMs: 200, promptGraceMs: 100 }, 4 << 20));
    expect(msg).toContain('promptGraceMs (100) must be at least pollIntervalMs (200)');
  });

  it('maxReadBytes above the retained bytes is refused, naming the field', () => {
    const msg = failure(() => resolveReadinessConfig({ maxReadBytes: 512 * 1024 }, 256 * 1024));
    expect(msg).toContain('maxReadBytes (524288) must not exceed the retained bytes (262144)');
  });

  it('the relay config names agents.* fields and relates maxReadBytes to limits.ringBytes', () => {
    expect(failure(() => validateConfig({ agents: { promptGraceMs: 10, pollIntervalMs: 20 } }))).toMatch(
      /^agents\.promptGraceMs \(10\) must be at least pollIntervalMs/,
    );
    expect(
      failure(() =>
        validateConfig({
          limits: { ringBytes: 128 * 1024 },
          flowControl: { creditWindow: 64 * 1024, ackBytes: 16 * 1024 },
          agents: { maxReadBytes: 200 * 1024 },
        }),
      ),
    ).toContain('agents.maxReadBytes (204800) must not exceed limits.ringBytes (131072)');
    expect(failure(() => validateConfig({ agents: { ownerGraceMs: -1 } }))).toContain('agents.ownerGraceMs');
    expect(failure(() => validateConfig({ agents: { graceMs: 1 } }))).toContain(
      'agents.graceMs is not a known setting',
    );
    const ok = validateConfig({ agents: { ownerGraceMs: 1000, inferredIdleMs: 2000 } }).agents;
    expect(ok).toMatchObject({ ownerGraceMs: 1000, inferredIdleMs: 2000, defaultTimeoutMs: 30_000 });
    expect(validateConfig({}).agents.ownerGraceMs).toBe(10 * 60 * 1000);
    expect(readinessDaemonArgs(ok)).toEqual([
      '--agent-poll-ms',
      '50',
      '--agent-prompt-grace-ms',
      '150',
      '--agent-idle-ms',
      '2000',
      '--max-read-bytes',
      String(256 * 1024),
    ]);
  });
});

describe('agent wire schemas', () => {
  const fail = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return { code: (err as { code: string }).code, message: (err as Error).message };
    }
    throw new Error('expected a failure');
  };

  it('name the bad field of params (INVALID_ARGUMENT) and of results (PROTOCOL_ERROR)', () => {
    expect(
      parseWire(agentSendParamsSchema, { id: 'pty-1', data: 'ls\r', timeoutMs: 5 }, 'agentSend'),
    ).toEqual({
      id: 'pty-1',
      data: 'ls\r',
      timeoutMs: 5,
    });
    expect(
      fail(() => parseWire(agentSendParamsSchema, { id: 'pty-1', data: 'x', timeoutMs: 0 }, 'agentSend')),
    ).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'agentSend: timeoutMs must be at least 1',
    });
    expect(
      fail(() => parseWire(agentSendParamsSchema, { id: 'pty-1', data: 3, timeoutMs: 9 }, 'agentSend'))
        .message,
    ).toBe('agentSend: data must be a string');
    expect(
      fail(() =>
        parseWire(
          agentSendParamsSchema,
          { id: 'p', data: 'x'.repeat(MAX_AGENT_SEND_BYTES + 1), timeoutMs: 9 },
          'agentSend',
        ),
      ).message,
    ).toBe(`agentSend: data must be at most ${MAX_AGENT_SEND_BYTES} bytes`);
    expect(fail(() => parseWire(agentReadParamsSchema, { id: 'p', count: 0 }, 'agentRead')).message).toBe(
      'agentRead: count must be at least 1',
    );
    const bad = { reason: 'done', output: '', truncated: false, elapsedMs: 1 };
    expect(fail(() => parseWire(agentSendResultSchema, bad, 'agentSend result', 'PROTOCOL_ERROR'))).toEqual({
      code: 'PROTOCOL_ERROR',
      message: 'agentSend result: reason must be stdin_read, inferred_idle, timeout or session_exit',
    });
    const ok = { reason: 'stdin_read', output: '', truncated: false, elapsedMs: 1 };
    expect(parseWire(agentSendResultSchema, { ...ok, awaiting: 'pager' }, 'agentSend result').awaiting).toBe(
      'pager',
    );
    expect(
      fail(() => parseWire(agentSendResultSchema, { ...ok, awaiting: 'shell' }, 'agentSend result')).message,
    ).toBe('agentSend result: awaiting must be one of prompt, password, pager, program, unknown');
  });
});
