import { describe, expect, it } from 'vitest';
import { BATCH_MAX_BYTES, OutputBatcher } from '../../agent-stub/daemon/output-batcher.js';
import type { PtySession } from '../../agent-stub/session/pty-session.js';

const A = { id: 'a' } as unknown as PtySession;
const B = { id: 'b' } as unknown as PtySession;

function setup() {
  let t = 0;
  const sent: string[] = [];
  const b = new OutputBatcher(
    (s, seq, chunks, bytes) => {
      const d = Buffer.concat(chunks);
      expect(d.length).toBe(bytes);
      sent.push(`${(s as unknown as { id: string }).id}@${seq}:${d.toString()}`);
    },
    () => t,
  );
  return { b, sent, advance: (ms: number) => (t += ms) };
}

describe('OutputBatcher', () => {
  it('sends the first chunk after a quiet period at once (typing echo)', () => {
    const { b, sent, advance } = setup();
    advance(100);
    b.push(A, 0, Buffer.from('x'));
    expect(sent).toEqual(['a@0:x']);
    b.dispose();
  });

  it('merges a burst per session and flushes in order before anything else', () => {
    const { b, sent, advance } = setup();
    advance(100);
    b.push(A, 0, Buffer.from('1'));
    b.push(A, 1, Buffer.from('23'));
    b.push(B, 7, Buffer.from('z'));
    b.push(A, 3, Buffer.from('4'));
    expect(sent).toEqual(['a@0:1']);
    b.flush();
    expect(sent).toEqual(['a@0:1', 'a@1:234', 'b@7:z']);
    b.dispose();
  });

  it('sends a session batch as soon as it is large, and drops a detached session', () => {
    const { b, sent, advance } = setup();
    advance(100);
    b.push(A, 0, Buffer.from('a'));
    b.push(A, 1, Buffer.alloc(BATCH_MAX_BYTES - 1, 0x61));
    expect(sent).toHaveLength(1);
    b.push(A, BATCH_MAX_BYTES, Buffer.from('b'));
    expect(sent).toHaveLength(2);
    b.push(B, 0, Buffer.from('gone'));
    b.drop(B);
    b.flush();
    expect(sent.join('')).not.toContain('gone');
    b.dispose();
  });
});
