import { describe, expect, it } from 'vitest';
import { DEFAULT_TAIL_BYTES, IDLE_TAIL_BYTES } from '../../agent-stub/history/history-limits.js';
import type { PtySession } from '../../agent-stub/session/pty-session.js';
import { inProcessLoggedSessions } from '../support/in-process-sessions.js';
import { waitFor } from '../support/local-daemon.js';

const MiB = 1024 * 1024;
/** `seq 1 60000`: 348,894 bytes (more than the tail) plus the PTY's CRs. */
const LINES = 60_000;

/**
 * The RAM tail of an idle session (its model dropped its scrollback; its log is healthy) shrinks to
 * IDLE_TAIL_BYTES and grows back at the next input or output; whatever the ring let go is still
 * read, byte for byte, from the log. The daemon's sweep (refreshRingLimit, then sweepModel, every
 * second) is driven by hand here, in the session code of the test's own process.
 */
describe('the RAM tail of an idle session', () => {
  const env = inProcessLoggedSessions('ptr-idle-tail-', {
    ringBytes: 4 * MiB,
    scrollbackRows: 1000,
    scrollbackIdleMs: 200,
    tailBytes: DEFAULT_TAIL_BYTES,
    logBytes: 64 * MiB,
    logKeepsBytes: 56 * MiB,
  });

  const sweep = (s: PtySession) => {
    s.refreshRingLimit();
    s.sweepModel(Date.now());
  };

  it('keeps only the idle tail in RAM, reads the rest from the log, and widens at the next input', async () => {
    const s = env.registry.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', `seq 1 ${LINES}; echo TAIL-END; exec cat`],
    }).session;
    const all = await waitFor(
      async () => {
        const bytes = await s.history.read(0);
        return bytes?.toString('latin1').includes('TAIL-END') ? bytes : undefined;
      },
      20_000,
      'the output',
    );
    expect(all.length).toBeGreaterThan(DEFAULT_TAIL_BYTES);
    expect(s.ring.allocated).toBe(DEFAULT_TAIL_BYTES);
    await waitFor(
      () => {
        sweep(s);
        return s.ring.allocated <= IDLE_TAIL_BYTES;
      },
      10_000,
      'the idle tail',
    );
    expect(s.ring.capacity).toBe(IDLE_TAIL_BYTES);
    expect(s.ring.start).toBe(s.history.head - IDLE_TAIL_BYTES);
    // Nothing is lost: the log still has every byte, the tail's and the older ones.
    expect(s.history.start).toBe(0);
    expect(await s.history.read(0, all.length)).toEqual(all);
    // Input (and its echo) is use: the whole tail is kept again from the next byte on.
    s.write(new TextEncoder().encode('x'));
    expect(s.ring.capacity).toBe(DEFAULT_TAIL_BYTES);
    await waitFor(async () => (await s.history.read(all.length))?.includes('x'), 10_000, 'the echo');
  });

  it('keeps only the idle tail while every attached link has the session in the background', async () => {
    const s = env.registry.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', `read go; seq 1 ${LINES}; echo BG-END; exec cat`],
    }).session;
    let background = true;
    // A link as the session sees one (the daemon's connection): only whether it is in the background matters here.
    s.addSink({ data() {}, fact() {}, exit() {}, isBackground: () => background, removed() {} });
    s.refreshRingLimit();
    expect(s.ring.capacity).toBe(IDLE_TAIL_BYTES);
    // Output does not widen it: those links get a thinned tail of their own. (The output is the
    // program's, not a long echo of input, which a busy machine's tty may cut when its queue fills.)
    s.write(new TextEncoder().encode('go\n'));
    await waitFor(
      async () => (await s.history.read(0))?.toString('latin1').includes('BG-END'),
      20_000,
      'the output',
    );
    expect(s.history.head).toBeGreaterThan(2 * IDLE_TAIL_BYTES);
    s.refreshRingLimit();
    expect(s.ring.capacity).toBe(IDLE_TAIL_BYTES);
    expect(s.ring.allocated).toBeLessThanOrEqual(IDLE_TAIL_BYTES);
    expect((await s.history.read(0))?.length).toBe(s.history.head);
    // A link brings it back: the whole tail from then on.
    background = false;
    s.refreshRingLimit();
    expect(s.ring.capacity).toBe(DEFAULT_TAIL_BYTES);
  });
});
