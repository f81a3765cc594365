import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StartMarkerScanner } from '../../relay/deploy/start-marker.js';

const MARKER = 'PTYRELAYABC123X';

/** Feeds `chunks` and returns the payload after the marker (all chunks that follow included). */
function scan(chunks: Buffer[], max = 1 << 20): Buffer | undefined {
  const s = new StartMarkerScanner(MARKER, max);
  const out: Buffer[] = [];
  let found = false;
  for (const c of chunks) {
    if (found) out.push(c);
    else {
      const rest = s.feed(c);
      if (rest) {
        found = true;
        out.push(rest);
      }
    }
  }
  return found ? Buffer.concat(out) : undefined;
}

describe('StartMarkerScanner', () => {
  it('drops rc-file noise before the marker, whatever the chunking', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 300 }).filter((s) => !s.includes(MARKER)),
        fc.uint8Array({ maxLength: 300 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (noise, payload, cuts) => {
          const all = Buffer.concat([Buffer.from(`${noise}${MARKER}\n`), Buffer.from(payload)]);
          const at = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...at, all.length]
            .slice(1)
            .map((end, i, ends) => all.subarray(i ? ends[i - 1] : 0, end));
          expect(scan(chunks.length ? chunks : [all])?.equals(Buffer.from(payload))).toBe(true);
        },
      ),
    );
  });

  it('needs the newline after the marker and gives up after too much noise', () => {
    expect(scan([Buffer.from(`${MARKER}x`)])).toBeUndefined();
    expect(() => scan([Buffer.alloc(64, 'W'), Buffer.alloc(64, 'W')], 100)).toThrow(/no start marker/);
  });
});
