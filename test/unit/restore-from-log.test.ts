import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveHistoryLimits } from '../../agent-stub/history/history-limits.js';
import {
  deadSessionLogDir,
  HistoryStore,
  removeDeadSessionLog,
} from '../../agent-stub/history/history-store.js';
import { screenFromLog } from '../../agent-stub/restore/log-scrollback.js';
import { renderLines } from '../containers/support/screen-text.js';

const root = mkdtempSync(join(tmpdir(), 'ptr-restorelog-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const d = join(root, `s${n++}`);
  mkdirSync(d, { recursive: true });
  return d;
};
const seg = (seq: number) => `${String(seq).padStart(16, '0')}.seg`;
/** A pid that runs nothing: its daemon dir is a dead daemon's. */
const DEAD = '4194000:12345';

describe('a dead session log rebuilds the restored screen', () => {
  it('parses the tail of the segments, from a line start, with bounded scrollback', async () => {
    const dir = fresh();
    const lines = Array.from({ length: 3000 }, (_, i) => `row-${i + 1}`);
    const text = Buffer.from(`${lines.join('\r\n')}\r\n$ `);
    // Two segments; the first starts after dropped history (seq 100).
    writeFileSync(join(dir, seg(100)), text.subarray(0, 20_000));
    writeFileSync(join(dir, seg(100 + 20_000)), text.subarray(20_000));
    const full = await screenFromLog(dir, { cols: 40, rows: 10 });
    expect(full?.seq).toBe(100 + text.length);
    expect(full?.alternateScreen).toBe(false);
    const shown = await renderLines(full?.screen ?? '', 40, 10);
    // Older history was dropped: the first line may be partial, so the screen starts after it.
    expect(shown[0]).toBe('row-2');
    expect(shown).toContain('row-3000');

    const tail = await screenFromLog(dir, { cols: 40, rows: 10, tailBytes: 1000 });
    const tailShown = await renderLines(tail?.screen ?? '', 40, 10);
    // Cut mid-log: the first line starts after an LF, so no half row.
    expect(tailShown[0]).toMatch(/^row-\d+$/);
    expect(Number(tailShown[0].slice(4))).toBeGreaterThan(2850);

    const few = await screenFromLog(dir, { cols: 40, rows: 10, scrollbackRows: 50 });
    expect(
      (await renderLines(few?.screen ?? '', 40, 10)).filter((l) => l.startsWith('row-')).length,
    ).toBeLessThanOrEqual(60);

    const small = await screenFromLog(dir, { cols: 40, rows: 10, maxScreenBytes: 4000 });
    expect(Buffer.byteLength(small?.screen ?? '')).toBeLessThanOrEqual(4000);
    expect(small?.scrollbackRows).toBeLessThan(10_000);
  });

  it('gives undefined for a missing dir or one without segments', async () => {
    expect(await screenFromLog(join(root, 'none'), { cols: 80, rows: 24 })).toBeUndefined();
    expect(await screenFromLog(fresh(), { cols: 80, rows: 24 })).toBeUndefined();
  });

  it('the start sweep keeps the dead daemon logs a record needs and removes the rest', () => {
    const stateDir = fresh();
    const kept = deadSessionLogDir(stateDir, DEAD, 'pty-1');
    const other = deadSessionLogDir(stateDir, DEAD, 'pty-2');
    const unneeded = deadSessionLogDir(stateDir, '4194001:1', 'pty-3');
    for (const d of [kept, other, unneeded]) {
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, seg(0)), 'x\n');
    }
    const logged: string[] = [];
    const store = new HistoryStore(
      stateDir,
      resolveHistoryLimits({}),
      (m) => logged.push(m),
      (owner, id) => owner === DEAD && id === 'pty-1',
    );
    expect(existsSync(join(kept, seg(0)))).toBe(true);
    expect(existsSync(other)).toBe(false);
    expect(existsSync(join(unneeded, '..'))).toBe(false);
    expect(logged).toContain('kept output logs of a daemon that is gone for cold restore');
    // Once read, the log goes, and its daemon dir with the last one.
    removeDeadSessionLog(kept);
    expect(existsSync(join(kept, '..'))).toBe(false);
    store.dispose();
    expect(existsSync(store.dir)).toBe(false);
  });
});
