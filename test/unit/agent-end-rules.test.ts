import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { atShellPrompt, endReason, type SendObservation } from '../../agent-stub/readiness/end-rules.js';
import { newWaits } from '../../agent-stub/readiness/tty-wait-probe.js';

const base: SendObservation = {
  now: 10_000,
  deadline: 60_000,
  idleMs: 5000,
  promptGraceMs: 150,
  exited: false,
  promptSeen: false,
  lastOutputAt: 9_990,
  topIsForeground: undefined,
  topWaitsForInput: undefined,
  ttyWaitConfirmed: false,
};

describe('endReason', () => {
  it('keeps waiting while output flows and nothing is known', () => {
    expect(endReason(base)).toBeUndefined();
  });

  it('session_exit wins over everything', () => {
    expect(endReason({ ...base, exited: true, promptSeen: true, ttyWaitConfirmed: true, now: 99_999 })).toBe(
      'session_exit',
    );
  });

  it('the prompt marker counts only after the grace of quiet and with the shell in the foreground', () => {
    const seen = { ...base, promptSeen: true, lastOutputAt: 9_900 };
    expect(endReason({ ...seen, topIsForeground: true })).toBeUndefined(); // quiet 100 < 150
    expect(endReason({ ...seen, topIsForeground: true, now: 10_050 })).toBe('stdin_read');
    // A foreground child that inherited PROMPT_COMMAND printed the marker: not the shell's prompt.
    expect(endReason({ ...seen, topIsForeground: false, now: 10_050 })).toBeUndefined();
  });

  it('where /proc tells, the prompt counts only while the shell waits for input at it', () => {
    const quiet = { ...base, promptSeen: true, lastOutputAt: 9_000, topIsForeground: true };
    // Text typed before the prompt was printed: the shell reads it and expands PS0 (no output).
    expect(endReason({ ...quiet, topWaitsForInput: false })).toBeUndefined();
    expect(endReason({ ...quiet, topWaitsForInput: true })).toBe('stdin_read');
    // No ptrace access to /proc: the marker, the grace and the foreground decide as before.
    expect(endReason({ ...quiet, topWaitsForInput: undefined })).toBe('stdin_read');
  });

  it('a confirmed tty wait is stdin_read even without a marker (REPLs, shells without integration)', () => {
    expect(endReason({ ...base, ttyWaitConfirmed: true, topIsForeground: false })).toBe('stdin_read');
  });

  it('silence past the threshold is inferred_idle, before the deadline check', () => {
    expect(endReason({ ...base, lastOutputAt: 4_999 })).toBe('inferred_idle');
    expect(endReason({ ...base, lastOutputAt: 4_999, now: 60_000, deadline: 60_000 })).toBe('inferred_idle');
    expect(endReason({ ...base, now: 60_000, lastOutputAt: 59_000 })).toBe('timeout');
  });

  it('never ends early: without exit, marker, wait or silence it is undefined before the deadline', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_999 }), fc.integer({ min: 1, max: 50_000 }), (quiet, left) => {
        const now = 100_000;
        const o = { ...base, now, lastOutputAt: now - quiet, deadline: now + left, topIsForeground: true };
        expect(endReason(o)).toBeUndefined();
      }),
    );
  });
});

describe('atShellPrompt (what makes a stdin_read `awaiting: prompt`)', () => {
  it('the marker with the shell in the foreground and not busy, whichever rule ended the send', () => {
    const marked = { ...base, promptSeen: true, topIsForeground: true, topWaitsForInput: true };
    expect(atShellPrompt(marked)).toBe(true);
    // The tty-wait rule can end the send before the prompt's grace: still the prompt.
    expect(endReason({ ...marked, ttyWaitConfirmed: true })).toBe('stdin_read');
    expect(atShellPrompt({ ...marked, ttyWaitConfirmed: true })).toBe(true);
    expect(atShellPrompt({ ...marked, topIsForeground: undefined, topWaitsForInput: undefined })).toBe(true);
    // A command started after the marker (`read x`), a child in the foreground, the shell busy.
    expect(atShellPrompt({ ...marked, promptSeen: false })).toBe(false);
    expect(atShellPrompt({ ...marked, topIsForeground: false })).toBe(false);
    expect(atShellPrompt({ ...marked, topWaitsForInput: false })).toBe(false);
  });

  it('the prompt rule of endReason is atShellPrompt plus the grace', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.constantFrom(true, false, undefined),
        fc.constantFrom(true, false, undefined),
        fc.integer({ min: 0, max: 4_999 }),
        (promptSeen, topIsForeground, topWaitsForInput, quiet) => {
          const o = {
            ...base,
            promptSeen,
            topIsForeground,
            topWaitsForInput,
            lastOutputAt: base.now - quiet,
          };
          const prompt = atShellPrompt(o) && quiet >= o.promptGraceMs;
          expect(endReason(o)).toBe(prompt ? 'stdin_read' : undefined);
        },
      ),
    );
  });
});

describe('newWaits', () => {
  it('ignores a wait that existed before the write unless the process woke since', () => {
    const before = new Map([
      [10, 5],
      [11, 7],
    ]);
    const now = [
      { pid: 10, switches: 5 },
      { pid: 11, switches: 8 },
      { pid: 12, switches: 1 },
    ];
    expect(newWaits(now, before).map((w) => w.pid)).toEqual([11, 12]);
  });
});
