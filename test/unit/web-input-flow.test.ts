import { describe, expect, it } from 'vitest';
import { FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { OutputFlow } from '../../web/output-flow.js';
import { PageInput } from '../../web/page-input.js';

const seqOf = (frame: Uint8Array) => (new FrameDecoder().push(frame)[0] as { inputSeq: number }).inputSeq;

describe('PageInput (web page input through the one InputQueue, exactly once)', () => {
  it('resends unacknowledged input to a relay that knows the page, in order', () => {
    const sent: number[] = [];
    let up = true;
    const q = new PageInput(
      (f) => {
        if (up) sent.push(seqOf(f));
        return up;
      },
      () => {},
    );
    q.resume(true, false);
    q.write('local/pty-1', 'a');
    q.write('local/pty-1', 'b');
    q.acknowledge(1);
    up = false;
    q.linkDown();
    q.write('local/pty-1', 'c'); // typed while the link is down
    up = true;
    q.resume(true, false);
    expect(sent).toEqual([1, 2, 2, 3]);
  });

  it('drops input already sent to a relay that lost its record, with an error, and sends the rest', async () => {
    const sent: number[] = [];
    const errors: string[] = [];
    let up = true;
    const q = new PageInput(
      (f) => {
        if (up) sent.push(seqOf(f));
        return up;
      },
      (e) => errors.push(e.code),
    );
    q.resume(true, false);
    q.write('local/pty-1', 'a');
    up = false;
    q.linkDown();
    q.write('local/pty-1', 'b');
    up = true;
    q.resume(false, false);
    expect(sent).toEqual([1, 2]);
    await Promise.resolve();
    expect(errors).toEqual(['LINK_CLOSED']);
  });

  it('resends input already sent to a relay that forwards origins (another relay of a fleet), marked as resent', async () => {
    const sent: [number, number][] = [];
    const errors: string[] = [];
    let up = true;
    const q = new PageInput(
      (f) => {
        const [frame] = new FrameDecoder().push(f) as { type: number; inputSeq: number }[];
        if (up) sent.push([frame.type, frame.inputSeq]);
        return up;
      },
      (e) => errors.push(e.code),
    );
    q.resume(true, true);
    q.write('local/pty-1', 'a');
    up = false;
    q.linkDown();
    q.write('local/pty-1', 'b');
    up = true;
    q.resume(false, true);
    expect(sent).toEqual([
      [FrameType.Input, 1],
      [FrameType.InputResent, 1],
      [FrameType.Input, 2],
    ]);
    await Promise.resolve();
    expect(errors).toEqual([]);
  });

  it('refuses input beyond its bound while the link is down with INPUT_QUEUE_FULL and reports failed frames', async () => {
    const errors: string[] = [];
    const q = new PageInput(
      () => false,
      (e) => errors.push(e.code),
    );
    for (let i = 0; i < 5; i++) q.write('local/pty-1', 'x'.repeat(32 * 1024));
    await Promise.resolve();
    expect(errors).toContain('INPUT_QUEUE_FULL');
    q.acknowledge(1, [{ inputSeq: 1, error: { code: 'NOT_OWNER', message: 'no' } }]);
    await Promise.resolve();
    expect(errors).toContain('NOT_OWNER');
  });
});

/** A terminal whose parser finishes writes only when told to. */
class SlowTerm {
  queue: (() => void)[] = [];
  written = 0;
  write(d: Uint8Array | string, cb?: () => void) {
    this.written += d.length;
    this.queue.push(cb ?? (() => {}));
  }
  /** Parses everything, piece after piece, as the flow hands it over. */
  async parseAll() {
    for (let i = 0; i < 10_000 && this.queue.length > 0; i++) {
      for (const cb of this.queue.splice(0)) cb();
      await new Promise((r) => setTimeout(r, 6));
    }
  }
}

describe('OutputFlow (the only writer of a view; acks as xterm parses)', () => {
  it('hands xterm one piece at a time, acks parsed output, pauses above 1 MiB and resumes below', async () => {
    const term = new SlowTerm();
    const acks: number[] = [];
    const pauses: boolean[] = [];
    const flow = new OutputFlow(term, undefined, {
      ack: (s) => acks.push(s),
      pause: (on) => pauses.push(on),
    });
    const chunk = new Uint8Array(512 * 1024);
    for (let i = 1; i <= 3; i++) flow.write(chunk, i * chunk.length);
    expect(term.written).toBe(16 * 1024);
    expect(acks).toEqual([]);
    expect(pauses).toEqual([true]);
    await term.parseAll();
    expect(term.written).toBe(3 * chunk.length);
    expect(acks.at(-1)).toBe(3 * chunk.length);
    expect(acks.every((a, i) => i === 0 || a - acks[i - 1]! >= 64 * 1024)).toBe(true);
    expect(pauses).toEqual([true, false]);
  });

  it('drops what is queued at a restart, counts skipped output as consumed, keeps text in order', async () => {
    const term = new SlowTerm();
    const acks: number[] = [];
    const flow = new OutputFlow(term, undefined, { ack: (s) => acks.push(s), pause: () => {} });
    flow.write(new Uint8Array(40 * 1024), 40 * 1024);
    flow.restart(1000);
    flow.writeText('reset');
    await term.parseAll();
    expect(term.written).toBe(16 * 1024 + 'reset'.length);
    expect(acks).toEqual([]);
    flow.skip(5000);
    expect(acks).toEqual([5000]);
  });

  it('runs a call queued after a snapshot once the snapshot is parsed, not before; a restart drops it', async () => {
    const term = new SlowTerm();
    const flow = new OutputFlow(term, undefined, { ack: () => {}, pause: () => {} });
    const seen: number[] = [];
    flow.writeText('x'.repeat(40 * 1024));
    flow.afterParsed(() => seen.push(term.written));
    expect(seen).toEqual([]);
    await term.parseAll();
    // The snapshot's text went over whole (text is not cut into pieces) and was parsed first.
    expect(seen).toEqual([40 * 1024]);
    flow.writeText('stale');
    flow.afterParsed(() => seen.push(-1));
    flow.restart(0);
    await term.parseAll();
    expect(seen).toEqual([40 * 1024]);
  });
});
